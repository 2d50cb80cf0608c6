# config modules
