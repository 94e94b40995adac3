/**
 * A fake of the DOM slice the UI's client code uses (client_dom.ts's `UiDocument`), so views can be built
 * and inspected in Deno without a browser: elements keep their tag, attributes, children and listeners.
 */
import type { UiDocument, UiElement, UiEvent } from "./client_dom.ts";

export class FakeElement implements UiElement {
  id = "";
  className = "";
  hidden = false;
  title = "";
  value = "";
  disabled = false;
  readonly attributes = new Map<string, string>();
  readonly children: (FakeElement | string)[] = [];
  readonly listeners = new Map<string, ((e: UiEvent) => void)[]>();
  readonly classList = {
    toggle: (name: string, on?: boolean): boolean => {
      const names = new Set(this.className.split(/\s+/).filter((c) => c));
      const add = on ?? !names.has(name);
      if (add) names.add(name);
      else names.delete(name);
      this.className = [...names].join(" ");
      return add;
    },
  };

  constructor(readonly tag: string) {}

  get textContent(): string {
    return this.children.map((c) => typeof c === "string" ? c : c.textContent).join("");
  }

  set textContent(text: string | null) {
    this.children.length = 0;
    if (text) this.children.push(text);
  }

  append(...nodes: (UiElement | string)[]): void {
    this.children.push(...(nodes as (FakeElement | string)[]));
  }

  replaceChildren(...nodes: (UiElement | string)[]): void {
    this.children.length = 0;
    this.append(...nodes);
  }

  setAttribute(name: string, value: string): void {
    this.attributes.set(name, value);
    if (name === "id") this.id = value;
  }

  removeAttribute(name: string): void {
    this.attributes.delete(name);
    if (name === "id") this.id = "";
  }

  getAttribute(name: string): string | undefined {
    return this.attributes.get(name);
  }

  addEventListener(type: string, listener: (event: UiEvent) => void): void {
    this.listeners.set(type, [...(this.listeners.get(type) ?? []), listener]);
  }

  focus(): void {}

  click(): void {
    this.fire("click");
  }

  /** Calls the element's `type` listeners, as the browser would on that event (`submit`, `input`). */
  fire(type: string): void {
    for (const l of this.listeners.get(type) ?? []) l({ preventDefault() {} });
  }

  hasClass(name: string): boolean {
    return this.className.split(/\s+/).includes(name);
  }

  /** Descendants (not this element) that `match`, in document order. */
  findAll(match: (el: FakeElement) => boolean): FakeElement[] {
    const out: FakeElement[] = [];
    for (const c of this.children) {
      if (typeof c === "string") continue;
      if (match(c)) out.push(c);
      out.push(...c.findAll(match));
    }
    return out;
  }

  /** Descendants by tag, and by class (`tr.instance`) or attribute (`tr[data-instance=3]`) if given. */
  select(selector: string): FakeElement[] {
    const m = /^(\w+)?(?:\.([\w-]+))?(?:\[([\w-]+)(?:=([^\]]*))?\])?$/.exec(selector);
    if (!m) throw new Error(`Cannot select ${JSON.stringify(selector)}: expected tag.class[attr=value]`);
    const [, tag, cls, attr, value] = m;
    return this.findAll((el) =>
      (!tag || el.tag === tag) && (!cls || el.hasClass(cls)) &&
      (!attr || (value === undefined ? el.attributes.has(attr) : el.attributes.get(attr) === value))
    );
  }
}

/** Points the client code's `document` at a fake one for the rest of the test module. */
export function useFakeDocument(): void {
  const doc: UiDocument = {
    createElement: (tag) => new FakeElement(tag),
    getElementById: () => null,
    activeElement: null,
  };
  (globalThis as unknown as { document: UiDocument }).document = doc;
}

/** `el` as the fake it is (the client code's functions are typed with the DOM slice). */
export function fake(el: UiElement | undefined): FakeElement {
  if (!(el instanceof FakeElement)) throw new Error("expected an element built on the fake document");
  return el;
}
