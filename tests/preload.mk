# preload tests
