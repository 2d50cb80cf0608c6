# Drop-in for real SageMaker jobs: the corpus of real
# configurations compared with what the toolkit 4.5.0 gives them, the
# Python renderer and the job's torch, and real jobs on simulated hosts.
TESTS += tests/integration/toolkit_corpus.sh
EXTRA_DIST += tests/integration/toolkit_corpus.sh tests/helpers/corpus_compare.py tests/data/toolkit
check_PROGRAMS += tests/unit/test_pyrender
TESTS += tests/unit/test_pyrender
tests_unit_test_pyrender_CPPFLAGS = $(TEST_CPPFLAGS)
tests_unit_test_pyrender_LDADD = $(TEST_LIBS)
TESTS += tests/multihost/test_dropin.sh
EXTRA_DIST += tests/multihost/test_dropin.sh
