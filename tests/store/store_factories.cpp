#include "store_factories.h"

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <string>

#include "store/file_store.h"
#include "store/hash_store.h"
#include "store/prefix_store.h"
#include "store/tcp_store.h"

namespace collie {

std::string temp_store_path(const std::string& tag) {
  static std::atomic<int> n{0};
  return (std::filesystem::temp_directory_path() /
          ("collie_" + tag + "_" + std::to_string(getpid()) + "_" + std::to_string(n++)))
      .string();
}

std::vector<StoreFactory> all_store_factories() {
  std::vector<StoreFactory> out;
  out.push_back({"HashStore", [] {
                   auto f = std::make_unique<StoreFixture>();
                   auto s = std::make_shared<HashStore>();
                   f->primary = s;
                   f->connect = [s] { return s; };
                   return f;
                 }});
  out.push_back({"PrefixStore", [] {
                   auto f = std::make_unique<StoreFixture>();
                   auto base = std::make_shared<HashStore>();
                   f->primary = std::make_shared<PrefixStore>("pfx", base);
                   f->connect = [base] { return std::make_shared<PrefixStore>("pfx", base); };
                   return f;
                 }});
  out.push_back({"TcpStore", [] {
                   auto f = std::make_unique<StoreFixture>();
                   TcpStoreOptions o;
                   o.is_server = true;  // port 0: an ephemeral port
                   o.timeout = std::chrono::seconds(30);
                   auto server = std::make_shared<TcpStore>(o);
                   f->primary = server;
                   o.is_server = false;
                   o.port = server->port();
                   f->connect = [o] { return std::make_shared<TcpStore>(o); };
                   return f;
                 }});
  // The view DETAIL and subgroups use: a PrefixStore over another process's TcpStore.
  out.push_back({"PrefixOverTcpStore", [] {
                   auto f = std::make_unique<StoreFixture>();
                   TcpStoreOptions o;
                   o.is_server = true;
                   o.timeout = std::chrono::seconds(30);
                   auto server = std::make_shared<TcpStore>(o);
                   f->primary = std::make_shared<PrefixStore>("pfx", server);
                   o.is_server = false;
                   o.port = server->port();
                   f->connect = [o] {
                     return std::make_shared<PrefixStore>("pfx", std::make_shared<TcpStore>(o));
                   };
                   return f;
                 }});
  out.push_back({"FileStore", [] {
                   auto f = std::make_unique<StoreFixture>();
                   const std::string path = temp_store_path("fs");
                   f->primary = std::make_shared<FileStore>(path, 0, std::chrono::seconds(30));
                   f->connect = [path] {
                     return std::make_shared<FileStore>(path, 0, std::chrono::seconds(30));
                   };
                   f->cleanup = [path] { std::filesystem::remove(path); };
                   return f;
                 }});
  return out;
}

}  // namespace collie
