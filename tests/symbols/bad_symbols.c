/* A library exporting a name outside ctorch's namespace (and none of its API), for
 * the test that check_symbols.sh refuses it. */
int json_parse(const char *text);
int json_parse(const char *text) { return text != 0; }
int ct_fine(void);
int ct_fine(void) { return 0; }
