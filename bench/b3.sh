bench_b3() { :; }
