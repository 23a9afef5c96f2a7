/*
 * test_forced_call.h - a chat request's prompt whose answer is forced to be a tool call (the way a named
 * tool_choice starts one), on a scheduler's model: what test_tool_call_ids and test_alloc_fail_output run.
 * Header only, as test_util.h.
 */
#ifndef DSV4_TESTS_TEST_FORCED_CALL_H
#define DSV4_TESTS_TEST_FORCED_CALL_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dsv4.h"
#include "text/chat.h"

/* A call as the model writes it after a chat's content (the V4 DSML format). */
static const char tfc_forced_call[] =
    "\n\n<" DSV4_TOK_DSML "tool_calls>\n<" DSV4_TOK_DSML "invoke name=\"get_weather\">\n<" DSV4_TOK_DSML
    "parameter name=\"city\" string=\"true\">Paris</" DSV4_TOK_DSML "parameter>\n</" DSV4_TOK_DSML
    "invoke>\n</" DSV4_TOK_DSML "tool_calls>";

/* The ids of one user message ("Weather in Paris?") rendered as a chat prompt, then tfc_forced_call's: malloc'ed
 * into *ids (*n of them). 0, or -1 with err set. */
static inline int tfc_prompt(const dsv4_tokenizer *tok, int32_t **ids, int *n, char *err, size_t errlen)
{
    dsv4_chat_message msg = {.role = DSV4_CHAT_USER, .content = "Weather in Paris?"};
    dsv4_chat_opts co;
    dsv4_chat_opts_default(&co);
    dsv4_chat_prompt cp;
    int32_t *q = NULL, *c = NULL;
    size_t nq = 0, nc = 0;
    if (dsv4_chat_render(&msg, 1, &co, &cp, err, errlen)) return -1;
    const int bad = dsv4_chat_prompt_ids(tok, &cp, &q, &nq, err, errlen) ||
                    dsv4_tokenize(tok, tfc_forced_call, strlen(tfc_forced_call), true, &c, &nc, err, errlen);
    dsv4_chat_prompt_free(&cp);
    *ids = bad ? NULL : malloc((nq + nc) * sizeof **ids);
    if (!bad && *ids) {
        memcpy(*ids, q, nq * sizeof *q);
        memcpy(*ids + nq, c, nc * sizeof *c);
        *n = (int)(nq + nc);
    } else if (!bad)
        snprintf(err, errlen, "out of memory");
    free(q);
    free(c);
    return *ids ? 0 : -1;
}

#endif
