/* References a function no process provides: loading must fail with its name. */
extern int pk_test_no_such_function_anywhere(int);
int t_calls_missing(int x) { return pk_test_no_such_function_anywhere(x) + 1; }
