/*
 * fuzz_request.c - libFuzzer harness over the server's request parsing and
 * response rendering (src/server/openai.c): any bytes as a chat body and as a
 * completions body; what parses is rendered with the V4 chat encoding; the
 * bytes are also used as a request's generated output and rendered as a
 * response and as a stream. Run by tests/server/test_fuzz.sh for a bounded time.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "server/openai.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    srv_parse_limits lim = {.vocab_size = 512, .max_stops = SRV_MAX_STOPS};
    srv_params p;
    srv_error e;
    if (srv_parse_chat((const char *)data, size, &lim, &p, &e) == 0) {
        dsv4_chat_prompt prompt = {0};
        char err[256];
        dsv4_chat_render(p.conv.messages, p.conv.n_messages, &p.copts, &prompt, err, sizeof err);
        dsv4_chat_prompt_free(&prompt);
    } else {
        free(srv_error_json(&e));
    }
    srv_params_free(&p);
    if (srv_parse_completion((const char *)data, size, &lim, &p, &e)) free(srv_error_json(&e));
    srv_params_free(&p);

    /* the bytes as output: content, reasoning and a tool call's arguments */
    srv_req r;
    memset(&r, 0, sizeof r);
    size_t half = size / 2;
    dsv4_strbuf_put(&r.content, (const char *)data, half);
    dsv4_strbuf_put(&r.reasoning, (const char *)data + half, size - half);
    srv_tool_call tc = {.id = "call_0", .name = "f", .arguments = "{}"};
    r.tools = &tc;
    r.n_tools = size & 1;
    r.thinking = 1;
    r.done = 1;
    r.outcome = (srv_outcome)(size % SRV_OUTCOME_COUNT);
    srv_resp_meta m = {.id = "chatcmpl-x", .model = "m", .created = 1, .tok = NULL};
    srv_req *rs[] = {&r};
    free(srv_chat_response(&m, rs, 1, 0));
    free(srv_completion_response(&m, rs, 1, 0));
    srv_stream_pos pos = {0};
    dsv4_strbuf out = {0};
    srv_chat_stream(&m, &r, 0, 0, &pos, &out);
    srv_stream_end(&m, rs, 1, 1, 1, &out);
    memset(&pos, 0, sizeof pos);
    srv_completion_stream(&m, &r, 0, 0, &pos, &out);
    srv_stream_end(&m, rs, 1, 0, 1, &out);
    dsv4_strbuf_free(&out);
    dsv4_strbuf_free(&r.content);
    dsv4_strbuf_free(&r.reasoning);
    return 0;
}
