/*
 * pyrender.h - decoded hyperparameters written as the SageMaker training
 * toolkit (Python) writes them, byte for byte: json.dumps with sorted keys,
 * "," and ":" and ensure_ascii (SM_HPS, SM_HP_*, SM_TRAINING_ENV, ...), and
 * str() (the values of the program's arguments).
 *
 * jansson is not Python: it prints a float with 17 digits
 * ("0.10000000000000001" where Python prints "0.1") and \u escapes in
 * upper case ("\u00E9" where Python prints "\u00e9"), so these are written
 * here.  Python's str() of a string inside a list or dict is its repr():
 * quotes chosen as Python chooses them, \\ \n \r \t \' escaped, and the
 * characters Python does not print (controls, C1, U+00A0, U+00AD, the
 * Unicode spaces and format characters, private use) as \x, \u or \U
 * escapes; every other character is kept as it is.
 *
 * Pure; each function returns a new string (free()) or NULL when out of
 * memory.
 */
#ifndef SMT_PYRENDER_H
#define SMT_PYRENDER_H

#include <stddef.h>

#include <jansson.h>

/* json.dumps(V, sort_keys=True, separators=(",", ":"), ensure_ascii=True). */
char *smt_py_json(json_t *v);

/* str(V) of the decoded value: "True", "None", "['a', 'b']", "{'b': 1}". */
char *smt_py_str(json_t *v);

/* repr(V) / str(V) of a float: the shortest digits that read back as V,
 * "0.1", "123.0", "1e-05", "1e+16", "inf", "nan". */
void smt_py_float(double v, char *out, size_t outlen);

#endif
