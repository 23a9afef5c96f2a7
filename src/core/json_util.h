/*
 * json_util.h - what the parsers of config.json, safetensors headers and the
 * quantisation config say about a JSON value they did not expect.
 */
#ifndef DSV4_CORE_JSON_UTIL_H
#define DSV4_CORE_JSON_UTIL_H

#include <jansson.h>

/* "an object", "a string", ... for error messages. */
static inline const char *dsv4_json_type_name(const json_t *j)
{
    switch (json_typeof(j)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL: return "a number";
    case JSON_TRUE:
    case JSON_FALSE: return "a boolean";
    case JSON_NULL: return "null";
    }
    return "a value";
}

#endif
