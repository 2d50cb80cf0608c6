# api modules
