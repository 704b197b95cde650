#!/usr/bin/env node
// Writes the reference files of one tokenizer set of tests/data/tokenizers.tar.xz (encode.json,
// decode.json, chat.json, disagreements.json) from implementations that are not stormo's:
//   - encode and decode: Hugging Face's own Rust `tokenizers` library through its Node binding
//     (npm `tokenizers`), the library stormo's tokenizer follows;
//   - chat: Python's jinja2 set up as transformers' apply_chat_template sets it up
//     (scripts/chat-reference.py), the engine the templates were written for;
//   - second opinions, whose differences go to disagreements.json: transformers.js's tokenizers
//     (npm @lenml/tokenizers) for encode, npm @huggingface/jinja for chat.
//
//   node scripts/tokenizer-reference.mjs NPM_DIR SET_DIR TEXTS_JSON EXTRA_TEXTS_JSON CONVERSATIONS_JSON
//
// NPM_DIR holds node_modules with tokenizers, @lenml/tokenizers and @huggingface/jinja; SET_DIR is
// the set (tokenizer.json, tokenizer_config.json; its reference/ is written); TEXTS_JSON is an
// encode.json whose id, category and text are reused (the texts every set shares); EXTRA_TEXTS_JSON
// is a list of {id, category, text} for this tokenizer alone ("[]" file for none);
// CONVERSATIONS_JSON a list of {name, messages, options}.
import { createRequire } from "node:module";
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";

const [npmDir, setDir, textsFile, extraFile, conversationsFile] = process.argv.slice(2);
if (!conversationsFile) {
  console.error("usage: tokenizer-reference.mjs NPM_DIR SET_DIR TEXTS_JSON EXTRA_TEXTS_JSON CONVERSATIONS_JSON");
  process.exit(2);
}
const require = createRequire(path.resolve(npmDir, "node_modules") + "/");
const { Tokenizer } = require("tokenizers");
const { TokenizerLoader } = require("@lenml/tokenizers");
const { Template } = require("@huggingface/jinja");

const readJson = (f) => JSON.parse(fs.readFileSync(f, "utf8"));
const tokenizerJson = readJson(path.join(setDir, "tokenizer.json"));
const tokenizerConfig = readJson(path.join(setDir, "tokenizer_config.json"));
const rust = Tokenizer.fromFile(path.join(setDir, "tokenizer.json"));
// "Plain" encoding reads every added token's text as ordinary text, special or not: the same file
// with no added tokens at all.
const rustPlain = Tokenizer.fromString(JSON.stringify({ ...tokenizerJson, added_tokens: [] }));
const lenml = TokenizerLoader.fromPreTrained({ tokenizerJSON: tokenizerJson, tokenizerConfig });

const texts = [...readJson(textsFile).map(({ id, category, text }) => ({ id, category, text })), ...readJson(extraFile)];
const disagreements = [];
const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);

const encodeCases = [];
for (const { id, category, text } of texts) {
  const e = await rust.encode(text, null, { addSpecialTokens: false });
  const plain = await rustPlain.encode(text, null, { addSpecialTokens: false });
  const c = { id, category, text, ids: e.getIds(), ids_plain: plain.getIds(), tokens: e.getTokens() };
  encodeCases.push(c);
  const other = Array.from(lenml.encode(text, { add_special_tokens: false }));
  if (!same(other, c.ids)) disagreements.push({ case: id, text, reference_ids: c.ids, impl: "@lenml/tokenizers encode", ids: other });
}

// Decode: every encoding (and every plain one that differs), then pieces of multi-byte text one
// token at a time, every added token, and an empty list.
const added = tokenizerJson.added_tokens;
const decodeCases = [];
const decodeCase = async (id, ids, extra) => ({
  id,
  ...extra,
  ids,
  text: await rust.decode(ids, false),
  text_skip_special: await rust.decode(ids, true),
});
for (const c of encodeCases) {
  const d = await decodeCase(c.id, c.ids, {});
  decodeCases.push({ ...d, roundtrip: d.text === c.text });
  if (!same(c.ids, c.ids_plain)) {
    const p = await decodeCase(c.id + "-plain", c.ids_plain, {});
    decodeCases.push({ ...p, roundtrip: p.text === c.text });
  }
}
const pieces = [];
for (const word of ["🤖", "你好", "é", "👨‍👩‍👧‍👦", "한국어"]) {
  const ids = (await rust.encode(word, null, { addSpecialTokens: false })).getIds();
  ids.forEach((one, k) => pieces.push([`token ${k} of ${JSON.stringify(word)} alone`, [one]]));
  if (ids.length > 1) pieces.push([`all but last token of ${JSON.stringify(word)}`, ids.slice(0, -1)]);
}
pieces.push(["all added/special tokens", added.map((t) => t.id)]);
const helloWorld = (await rust.encode(" Hello world", null, { addSpecialTokens: false })).getIds();
pieces.push(["special + text + special", [added[1].id, ...helloWorld, added[2].id]]);
pieces.push(["empty id list", []]);
for (const [k, [note, ids]] of pieces.entries())
  decodeCases.push(await decodeCase("x" + String(k + 1).padStart(3, "0"), ids, { note }));

// Chat: jinja2 as transformers runs it renders; @huggingface/jinja is asked the same.
const conversations = readJson(conversationsFile);
const rendered = JSON.parse(
  execFileSync("python3", [path.join(path.dirname(new URL(import.meta.url).pathname), "chat-reference.py"),
    path.join(setDir, "tokenizer_config.json"), conversationsFile], { encoding: "utf8", maxBuffer: 1 << 26 }));
const specials = {};
for (const key of ["bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token"]) {
  const v = tokenizerConfig[key];
  if (v != null) specials[key] = typeof v === "string" ? v : v.content;
}
const jinjaFile = path.join(setDir, "chat_template.jinja");
let templateSource = fs.existsSync(jinjaFile) ? fs.readFileSync(jinjaFile, "utf8") : tokenizerConfig.chat_template;
if (Array.isArray(templateSource)) templateSource = templateSource.find((t) => t.name === "default").template;
const jsTemplate = new Template(templateSource);
const chatCases = [];
for (const [k, conv] of conversations.entries()) {
  const text = rendered[k];
  const { strftime_now, ...variables } = conv.options;
  const ids = (await rust.encode(text, null, { addSpecialTokens: false })).getIds();
  chatCases.push({ name: conv.name, messages: conv.messages, options: conv.options, text, ids });
  let other;
  try {
    other = jsTemplate.render({ ...specials, add_generation_prompt: false, ...variables, messages: conv.messages });
  } catch (err) {
    disagreements.push({ case: "chat:" + conv.name, impl: "@huggingface/jinja", error: String(err.message ?? err) });
    continue;
  }
  if (other !== text) disagreements.push({ case: "chat:" + conv.name, impl: "@huggingface/jinja", text: other });
}

const out = path.join(setDir, "reference");
fs.mkdirSync(out, { recursive: true });
const write = (name, value) => fs.writeFileSync(path.join(out, name), JSON.stringify(value, null, 1) + "\n");
write("encode.json", encodeCases);
write("decode.json", decodeCases);
write("chat.json", chatCases);
write("disagreements.json", disagreements);
console.log(`${setDir}: ${encodeCases.length} encode, ${decodeCases.length} decode, ${chatCases.length} chat cases; ${disagreements.length} disagreements`);
