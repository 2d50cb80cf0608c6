# core modules
