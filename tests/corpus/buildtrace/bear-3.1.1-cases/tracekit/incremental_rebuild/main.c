int util(void);
int more(void);
int main(void) { return util() + more(); }
