/**
 * Small YAML files whose every value is text (auth files, the CLI's credentials file), read as Go reads
 * them into string fields: a scalar keeps the text it was written as, so `password: 0123` is "0123", not 123.
 */
import { parseYamlSource, type SourceNode } from "../../core/model/yaml_load.ts";

/**
 * The plain value of `text`, with every number or boolean scalar as its source text (`1e3`, `0x1F`, `yes`,
 * a 20-digit number with all its digits); null stays null. Throws the first problem with its line, a key
 * given twice in one mapping included (it would leave one of two passwords unused without a word).
 */
export function parseYamlText(text: string): unknown {
  const parsed = parseYamlSource(text);
  if (!parsed.ok) {
    const [first] = parsed.errors;
    throw new Error(`line ${first.line}: ${first.message}`);
  }
  return plainText(parsed.root);
}

function plainText(node: SourceNode): unknown {
  switch (node.kind) {
    case "scalar":
      if (node.value === null || typeof node.value === "string") return node.value;
      return node.text ?? String(node.value);
    case "seq":
      return node.items.map(plainText);
    case "map": {
      const own = new Set<string>();
      for (const e of node.entries) {
        if (e.merged) continue;
        if (own.has(e.key)) throw new Error(`line ${e.line ?? 1}: key "${e.key}" is given twice`);
        own.add(e.key);
      }
      // Own properties whatever the key (`__proto__` too); a later entry (an own key after a merged one) wins.
      return Object.fromEntries(node.entries.map((e) => [e.key, plainText(e.value)]));
    }
  }
}
