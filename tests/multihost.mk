# multihost tests
