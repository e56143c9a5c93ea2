#!/usr/bin/env python3
"""Writes a Prometheus file_sd target file for the debug servers of a collie job.

  --from URL        any rank's debug server (http://host:port): the rank addresses are read
                    from its /v1/cluster/status, i.e. from the job's store (debug_server/<rank>)
  --hostfile FILE   lines "host [slots=N]"; rank servers at base port + local rank
Output (default stdout) is a JSON list with one target group per rank, labelled rank/host.
"""
import argparse
import json
import sys
import urllib.request
from urllib.parse import urlparse


def from_debug_server(url, timeout, token):
    req = urllib.request.Request(url.rstrip("/") + "/v1/cluster/status")
    if token:
        req.add_header("Authorization", "Bearer " + token)
    with urllib.request.urlopen(req, timeout=timeout) as r:
        cluster = json.load(r)
    groups = []
    for rank in cluster["ranks"]:
        u = urlparse(rank.get("url") or "")
        if not u.hostname:
            print(f"rank {rank['rank']}: no debug server address ({rank.get('error', '')})",
                  file=sys.stderr)
            continue
        groups.append({"targets": [f"{u.hostname}:{u.port}"],
                       "labels": {"rank": str(rank["rank"]), "host": u.hostname}})
    return groups


def from_hostfile(path, base_port):
    groups, rank = [], 0
    with open(path) as f:
        for line in f:
            fields = line.split("#", 1)[0].split()
            if not fields:
                continue
            slots = 1
            for opt in fields[1:]:
                if opt.startswith("slots="):
                    slots = int(opt.split("=", 1)[1])
            for local in range(slots):
                groups.append({"targets": [f"{fields[0]}:{base_port + local}"],
                               "labels": {"rank": str(rank), "host": fields[0]}})
                rank += 1
    return groups


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--from", dest="url", help="a rank's debug server URL")
    src.add_argument("--hostfile", help="hostfile (host [slots=N] per line)")
    p.add_argument("--base-port", type=int, default=9400, help="COLLIE_DEBUG_PORT of the job")
    p.add_argument("--token", default="", help="bearer token (COLLIE_DEBUG_TOKEN)")
    p.add_argument("--timeout", type=float, default=10.0, help="seconds for the HTTP request")
    p.add_argument("-o", "--output", help="file to write (atomically); default stdout")
    a = p.parse_args()
    try:
        groups = (from_debug_server(a.url, a.timeout, a.token) if a.url
                  else from_hostfile(a.hostfile, a.base_port))
    except (OSError, ValueError, KeyError) as e:
        print(f"collie_file_sd: {e}", file=sys.stderr)
        return 1
    text = json.dumps(groups, indent=2) + "\n"
    if a.output:
        tmp = a.output + ".tmp"
        with open(tmp, "w") as f:
            f.write(text)
        import os
        os.replace(tmp, a.output)  # Prometheus never reads a half-written file
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
