# A crashed rank's first line says where and why (crash.h), on
# simulated hosts with smtd as PID 1.
TESTS += tests/multihost/test_crash.sh
EXTRA_DIST += tests/multihost/test_crash.sh
TESTS += tests/integration/crash_faulthandler.sh
EXTRA_DIST += tests/integration/crash_faulthandler.sh
TESTS += tests/integration/crash_dataloader.sh
EXTRA_DIST += tests/integration/crash_dataloader.sh
