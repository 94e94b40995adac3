/** The core boundary rule as a checker: core/ imports nothing from sim/ or prod/ and touches no clock, randomness, timers or I/O. */

export interface Violation {
  file: string;
  line: number;
  rule: string;
  text: string;
}

/** Identifiers the core must not reach for; each has a port instead. */
const FORBIDDEN: { rule: string; re: RegExp }[] = [
  { rule: "wall clock (use the Clock port)", re: /\bDate\b/ },
  { rule: "randomness (use the Prng port)", re: /\bMath\s*\.\s*random\b/ },
  {
    rule: "timers (use the Clock port)",
    re: /\b(setTimeout|setInterval|clearTimeout|clearInterval|setImmediate)\b/,
  },
  { rule: "performance.now (use the Clock port)", re: /\bperformance\s*\.\s*now\b/ },
  { rule: "Deno APIs (I/O belongs to sim/ and prod/)", re: /\bDeno\s*\./ },
  { rule: "network (use the Transport port)", re: /\b(fetch|WebSocket|XMLHttpRequest)\b/ },
  { rule: "crypto randomness (use the Prng port)", re: /\bcrypto\s*\.\s*(getRandomValues|randomUUID)\b/ },
];

/** Blanks out comments and string contents (keeping line breaks) so only code is checked. */
export function stripCommentsAndStrings(src: string): string {
  let out = "";
  let i = 0;
  const n = src.length;
  while (i < n) {
    const c = src[i], d = src[i + 1];
    if (c === "/" && d === "/") {
      while (i < n && src[i] !== "\n") i++;
    } else if (c === "/" && d === "*") {
      i += 2;
      while (i < n && !(src[i] === "*" && src[i + 1] === "/")) out += src[i++] === "\n" ? "\n" : "";
      i += 2;
    } else if (c === '"' || c === "'" || c === "`") {
      out += c;
      i++;
      while (i < n && src[i] !== c) {
        if (src[i] === "\\") i++;
        else if (src[i] === "\n") out += "\n";
        i++;
      }
      out += c;
      i++;
    } else {
      out += c;
      i++;
    }
  }
  return out;
}

/** Import specifiers with their line numbers. */
function imports(src: string): { spec: string; line: number }[] {
  const out: { spec: string; line: number }[] = [];
  const re =
    /\b(?:import|export)\b[^;]*?\bfrom\s*["']([^"']+)["']|\bimport\s*\(\s*["']([^"']+)["']\s*\)|\bimport\s+["']([^"']+)["']/g;
  for (const m of src.matchAll(re)) {
    out.push({ spec: m[1] ?? m[2] ?? m[3], line: src.slice(0, m.index).split("\n").length });
  }
  return out;
}

/** Checks one core source file; `path` is relative to the repository root (e.g. `core/resmgr/x.ts`). */
export function checkCoreSource(path: string, src: string): Violation[] {
  const found: Violation[] = [];
  const dir = path.split("/").slice(0, -1);
  for (const { spec, line } of imports(src)) {
    if (spec.startsWith("node:")) {
      found.push({ file: path, line, rule: "node: built-ins (I/O belongs to sim/ and prod/)", text: spec });
    }
    if (!spec.startsWith(".")) continue;
    const parts = [...dir];
    for (const seg of spec.split("/")) {
      if (seg === "..") parts.pop();
      else if (seg !== ".") parts.push(seg);
    }
    if (parts[0] !== "core") found.push({ file: path, line, rule: `imports from ${parts[0]}/`, text: spec });
  }
  const code = stripCommentsAndStrings(src).split("\n");
  code.forEach((text, i) => {
    for (const { rule, re } of FORBIDDEN) {
      if (re.test(text)) found.push({ file: path, line: i + 1, rule, text: text.trim() });
    }
  });
  return found;
}

/** Every non-test TypeScript file under core/. */
export async function checkCore(root: string): Promise<Violation[]> {
  const found: Violation[] = [];
  const walk = async (dir: string): Promise<void> => {
    for await (const e of Deno.readDir(`${root}/${dir}`)) {
      const rel = `${dir}/${e.name}`;
      if (e.isDirectory) await walk(rel);
      else if (e.name.endsWith(".ts") && !e.name.endsWith("_test.ts")) {
        found.push(...checkCoreSource(rel, await Deno.readTextFile(`${root}/${rel}`)));
      }
    }
  };
  await walk("core");
  return found;
}

if (import.meta.main) {
  const found = await checkCore(".");
  for (const v of found) console.error(`${v.file}:${v.line}: ${v.rule}: ${v.text}`);
  Deno.exit(found.length ? 1 : 0);
}
