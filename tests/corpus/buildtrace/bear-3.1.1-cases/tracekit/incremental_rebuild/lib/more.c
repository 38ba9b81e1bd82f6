int more(void) { return 0; }
