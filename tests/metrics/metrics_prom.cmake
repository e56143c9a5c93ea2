# Prometheus metrics (metrics_prom module); kept in its own file so this folder's CMakeLists.txt
# only includes it.
collie_test(metrics_prom_test SOURCES metrics_prom_test.cpp inspector_metrics_test.cpp
            alloc_counter.cpp LABELS metrics TIMEOUT 60)
