bench_b4() { :; }; bench_b5() { :; }; bench_b6() { :; }; bench_b7() { :; }
