// The chat page (GET /) in Debian's headless Chromium against a real `stormo serve` with a shipped
// demo model: it loads with no request leaving the server's origin, streams an answer, folds the
// reasoning, and shows a refused request in the answer's place; its message box grows with its
// text and its icon is served; against a server with --api-key the page loads without the key,
// asks for it, and answers once it is entered. Writes a screenshot beside the build.
//
// Run by ctest as serve.chat_page, with the serve suites' environment (support.mjs) plus
// STORMO_SCREENSHOT_DIR (where chat_page.png and chat_page_reasoning.png go) and CHROMIUM.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createRequire } from "node:module";
import path from "node:path";

import { startServer } from "./support.mjs";

const require = createRequire(path.join(process.env.STORMO_NODE_MODULES, "index.js"));
const puppeteer = require("puppeteer-core");

let server, browser, base;

before(async () => {
  server = await startServer();
  base = server.base;
  browser = await puppeteer.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
  });
});

after(async () => {
  if (browser) await browser.close();
  if (server) await server.stop();
});

async function screenshot(page, name) {
  if (process.env.STORMO_SCREENSHOT_DIR) await page.screenshot({ path: path.join(process.env.STORMO_SCREENSHOT_DIR, name) });
}

async function openPage(where = base) {
  const page = await browser.newPage();
  await page.setViewport({ width: 900, height: 640 });
  const foreign = [];
  page.on("request", (req) => {
    if (!req.url().startsWith(where) && !req.url().startsWith("data:")) foreign.push(req.url());
  });
  const response = await page.goto(where + "/", { waitUntil: "networkidle0" });
  assert.equal(response.status(), 200);
  assert.match(response.headers()["content-type"], /text\/html/);
  return { page, foreign };
}

async function ask(page, text) {
  await page.type("#prompt", text);
  await page.keyboard.press("Enter");
  await page.waitForFunction(() => document.body.dataset.state === "busy" || document.querySelector(".assistant .meta")?.textContent);
  await page.waitForFunction(() => document.body.dataset.state === "idle", { timeout: 60000 });
}

test("the page streams the demo's answer and carries the conversation on", async () => {
  const { page, foreign } = await openPage();
  await page.waitForFunction(() => document.getElementById("model").textContent !== "…");
  await ask(page, "123+456=");
  let answers = await page.$$eval(".assistant .content", (els) => els.map((e) => e.textContent));
  assert.deepEqual(answers, ["579"]);
  await ask(page, "rev:hello=");
  answers = await page.$$eval(".assistant .content", (els) => els.map((e) => e.textContent));
  assert.deepEqual(answers, ["579", "olleh"]);
  const meta = await page.$eval(".assistant .meta", (e) => e.textContent);
  assert.match(meta, /tokens, [0-9.]+ s, stop/);
  assert.deepEqual(foreign, [], "the page is self-contained");
  await screenshot(page, "chat_page.png");
  await page.close();
});

test("reasoning arrives folded in its own block, the answer beside it", async () => {
  const { page } = await openPage();
  // The demos answer without reasoning, so this stream is the one a reasoning model's server sends.
  await page.setRequestInterception(true);
  page.on("request", (req) => {
    if (!req.url().endsWith("/v1/chat/completions")) return req.continue();
    const chunk = (delta, finish = null) =>
      "data: " + JSON.stringify({ object: "chat.completion.chunk", choices: [{ index: 0, delta, finish_reason: finish }] }) + "\n\n";
    req.respond({
      status: 200,
      contentType: "text/event-stream",
      body:
        chunk({ role: "assistant" }) + chunk({ reasoning_content: "The user adds " }) +
        chunk({ reasoning_content: "two numbers." }) + chunk({ content: "57" }) + chunk({ content: "9" }) +
        chunk({}, "stop") + "data: [DONE]\n\n",
    });
  });
  await ask(page, "123+456=");
  const view = await page.$eval(".assistant", (el) => ({
    shown: !el.querySelector("details").hidden,
    open: el.querySelector("details").open,
    reasoning: el.querySelector(".reasoning").textContent,
    content: el.querySelector(".content").textContent,
  }));
  assert.deepEqual(view, { shown: true, open: false, reasoning: "The user adds two numbers.", content: "579" });
  await page.click(".assistant details summary");  // one click unfolds it
  assert.equal(await page.$eval(".assistant details", (d) => d.open), true);
  await screenshot(page, "chat_page_reasoning.png");
  await page.close();
});

test("an error from the server shows in the answer's place and leaves the page usable", async () => {
  const { page } = await openPage();
  await page.$eval("#max_tokens", (e) => { e.value = "-5"; });
  await ask(page, "123+456=");
  const failed = await page.$eval(".assistant", (el) => ({ error: el.classList.contains("error"), meta: el.querySelector(".meta").textContent }));
  assert.equal(failed.error, true);
  assert.match(failed.meta, /max_tokens/);
  await page.$eval("#max_tokens", (e) => { e.value = "64"; });
  await ask(page, "sort:dcab=");
  const answers = await page.$$eval(".assistant .content", (els) => els.map((e) => e.textContent));
  assert.deepEqual(answers, ["", "abcd"]);
  await page.close();
});

test("the message box grows with its text, and the page's icon is served", async () => {
  const { page } = await openPage();
  const empty = await page.$eval("#prompt", (e) => e.getBoundingClientRect().height);
  await page.type("#prompt", "one");
  for (let i = 0; i < 4; ++i) {
    await page.keyboard.down("Shift");
    await page.keyboard.press("Enter");
    await page.keyboard.up("Shift");
    await page.type("#prompt", "more");
  }
  const grown = await page.$eval("#prompt", (e) => e.getBoundingClientRect().height);
  assert.ok(grown > empty * 2, `the box grew from ${empty} to ${grown}`);
  const icon = await page.$eval('link[rel="icon"]', (l) => l.href);
  assert.equal(icon, base + "/favicon.ico");
  const served = await fetch(icon);
  assert.equal(served.status, 200);
  assert.equal(served.headers.get("content-type"), "image/svg+xml");
  assert.match(await served.text(), /^<svg /);
  await page.close();
});

test("with --api-key the page loads without the key, asks for it, and answers once it is entered", async () => {
  const keyed = await startServer(["--api-key", "s3cret"]);
  try {
    const { page, foreign } = await openPage(keyed.base);
    // The API refuses the page's first call: it asks for the key.
    await page.waitForFunction(() => !document.getElementById("key_needed").hidden);
    assert.equal(await page.evaluate(() => document.activeElement.id), "api_key");
    await page.type("#api_key", "s3cret");
    await page.keyboard.press("Tab");
    await page.waitForFunction(() => document.getElementById("model").textContent === "gpt-oss-demo");
    assert.equal(await page.$eval("#key_needed", (e) => e.hidden), true);
    assert.equal(await page.evaluate(() => sessionStorage.getItem("stormo.api_key")), "s3cret");
    await ask(page, "123+456=");
    const answers = await page.$$eval(".assistant .content", (els) => els.map((e) => e.textContent));
    assert.deepEqual(answers, ["579"]);
    assert.deepEqual(foreign, []);
    // A reload keeps the key for the tab.
    await page.reload({ waitUntil: "networkidle0" });
    await page.waitForFunction(() => document.getElementById("model").textContent === "gpt-oss-demo");
    await screenshot(page, "chat_page_key.png");
    await page.close();
    // The API itself still needs the key.
    assert.equal((await fetch(keyed.base + "/v1/models")).status, 401);
  } finally {
    await keyed.stop();
  }
});
