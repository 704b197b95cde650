#!/usr/bin/env python3
"""Renders conversations with a model's chat template (chat_template.jinja beside
tokenizer_config.json when there is one, else its chat_template field) on jinja2, set up as
transformers' apply_chat_template sets it up (docs/chat_templates.md lists the settings): an
immutable sandbox with trim_blocks, lstrip_blocks and loop controls; tojson as json.dumps with
non-ASCII kept; raise_exception; strftime_now returning the conversation's "strftime_now" option;
the special tokens of tokenizer_config.json, then tools, documents and add_generation_prompt, then
the other options, then messages. Prints a JSON list of the rendered texts, in order.

    python3 scripts/chat-reference.py TOKENIZER_CONFIG_JSON CONVERSATIONS_JSON

Used by scripts/tokenizer-reference.mjs; CONVERSATIONS_JSON is a list of {name, messages, options}.
"""
import json
import os
import sys

import jinja2
import jinja2.ext
import jinja2.sandbox

SPECIAL_TOKEN_KEYS = ("bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token")


def tojson(value, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(value, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        config = json.load(f)
    with open(sys.argv[2], encoding="utf-8") as f:
        conversations = json.load(f)
    jinja_file = os.path.join(os.path.dirname(sys.argv[1]), "chat_template.jinja")
    if os.path.exists(jinja_file):
        with open(jinja_file, encoding="utf-8") as f:
            source = f.read()
    else:
        source = config["chat_template"]
    if isinstance(source, list):
        source = next(t["template"] for t in source if t["name"] == "default")
    specials = {}
    for key in SPECIAL_TOKEN_KEYS:
        value = config.get(key)
        if value is not None:
            specials[key] = value if isinstance(value, str) else value["content"]
    if config.get("additional_special_tokens"):
        specials["additional_special_tokens"] = config["additional_special_tokens"]

    texts = []
    for conversation in conversations:
        options = dict(conversation["options"])
        now = options.pop("strftime_now", None)
        env = jinja2.sandbox.ImmutableSandboxedEnvironment(
            trim_blocks=True, lstrip_blocks=True, extensions=[jinja2.ext.loopcontrols])
        env.filters["tojson"] = tojson
        env.globals["raise_exception"] = raise_exception
        env.globals["strftime_now"] = lambda fmt, now=now: now
        variables = dict(specials)
        variables["tools"] = options.pop("tools", None)
        variables["documents"] = options.pop("documents", None)
        variables["add_generation_prompt"] = options.pop("add_generation_prompt", False)
        variables.update(options)
        variables["messages"] = conversation["messages"]
        texts.append(env.from_string(source).render(**variables))
    json.dump(texts, sys.stdout, ensure_ascii=False)


if __name__ == "__main__":
    main()
