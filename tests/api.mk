# api tests
