# output tests
