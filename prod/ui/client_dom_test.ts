/** The client's formatters and focus keeping: times in UTC with their zone, and focus across a render. */
import assert from "node:assert/strict";
import { keepingFocus, pathView, timeView, type UiDocument, when } from "./client_dom.ts";
import { fake, FakeElement, useFakeDocument } from "./dom_testing.ts";

useFakeDocument();

Deno.test("times are shown in UTC with their zone, as the CLI prints them; the ISO time is the tooltip", () => {
  assert.equal(when("2026-11-27T21:02:03-08:00"), "2026-11-28 05:02:03 UTC");
  assert.equal(when("2024-05-01T10:00:00.123Z"), "2024-05-01 10:00:00 UTC");
  assert.equal(when(undefined), "—");
  assert.equal(when("not a time"), "not a time");
  const t = fake(timeView("2026-11-27T21:02:03-08:00") as FakeElement);
  assert.equal(t.tag, "time");
  assert.equal(t.textContent, "2026-11-28 05:02:03 UTC");
  assert.equal(t.getAttribute("datetime"), "2026-11-28T05:02:03.000Z");
  assert.match(t.getAttribute("title") ?? "", /^2026-11-28T05:02:03\.000Z · your time \S/);
  assert.equal(timeView(undefined), "—");
  assert.equal(timeView("soon"), "soon");
});

Deno.test("a render that replaces the focused element gives the focus to the new one with its id", () => {
  const page = new Map<string, FakeElement>();
  let active: FakeElement | null = null;
  class Focusable extends FakeElement {
    connected = true;
    get isConnected() {
      return this.connected;
    }
    override focus(): void {
      active = this;
    }
  }
  const doc = {
    createElement: (tag: string) => new Focusable(tag),
    getElementById: (id: string) => page.get(id) ?? null,
    get activeElement() {
      return active as unknown as UiDocument["activeElement"];
    },
  };
  const before = globalThis as unknown as { document: UiDocument };
  const saved = before.document;
  before.document = doc as unknown as UiDocument;
  try {
    const old = new Focusable("button");
    old.id = "action:Stop%20job";
    page.set(old.id, old);
    old.focus();
    const rebuilt = new Focusable("button");
    rebuilt.id = old.id;
    keepingFocus(() => {
      // The view is rebuilt: the old button leaves the page (and its focus), a new one with its id comes.
      old.connected = false;
      active = null;
      page.set(rebuilt.id, rebuilt);
    });
    assert.equal(active, rebuilt);
  } finally {
    before.document = saved;
  }
});

Deno.test("a pool path may wrap before each of its slashes but the first, and reads as it is", () => {
  const path = fake(pathView("/Batch/Nightly-ETL/Tiny"));
  assert.equal(path.textContent, "/Batch/Nightly-ETL/Tiny");
  assert.deepEqual(
    path.children.map((c) => typeof c === "string" ? c : `<${c.tag}>`),
    ["/Batch", "<wbr>", "/Nightly-ETL", "<wbr>", "/Tiny"],
  );
  assert.deepEqual(fake(pathView("/")).children, ["/"]);
});
