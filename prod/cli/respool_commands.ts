/** `peloton respool ...`: create, update, delete, dump, validate, and the offline what-if calculator. */
import { stringify } from "yaml";
import { loadRespoolConfig } from "../../core/model/load.ts";
import type { RespoolConfig } from "../../core/model/config_types.ts";
import {
  formatIssue,
  formatWhatIfJson,
  formatWhatIfTable,
  parseWhatIf,
  runWhatIf,
} from "../../core/resmgr/whatif.ts";
import type { Command } from "./command.ts";
import { UsageError } from "./command.ts";
import { loadConfigFile, readInput } from "./config_file.ts";
import { TERMINAL_TEXT } from "./format.ts";
import { respoolId } from "./job_commands.ts";

const RESPOOL = "peloton.api.respool.ResourceManager";

/**
 * Splits "/a/b" into its parent path "/a" and name "b", as Peloton's CLI does, and gives the pool's `path`
 * as the server names it: one trailing slash is dropped, as Peloton's CLI drops it ("/a/b/" is "/a/b"), and
 * is not repeated back as part of the pool's path.
 */
function splitPoolPath(given: string): { path: string; parent: string; name: string } {
  const path = given.endsWith("/") ? given.slice(0, -1) : given;
  if (!given.startsWith("/") || path === "" || path.slice(1).split("/").includes("")) {
    throw new UsageError(`PATH: got "${given}", expected a pool path such as /a/b (not /, no empty parts)`);
  }
  const i = path.lastIndexOf("/");
  return { path, parent: i === 0 ? "/" : path.slice(0, i), name: path.slice(i + 1) };
}

/**
 * A pool's parent is the pool PATH names, as Peloton's CLI has it: a file naming one is refused, by `create`
 * and by `validate` alike, rather than one of the two being silently overridden.
 */
function parentInFile(file: string, config: RespoolConfig): string | undefined {
  return config.parent ? `${file}: parent: the parent comes from PATH; remove it from the file` : undefined;
}

export const respoolCommands: Command[] = [
  {
    name: "respool create",
    args: ["PATH", "FILE"],
    summary: "create a resource pool at PATH from a YAML config (its name must be PATH's last part)",
    async run(ctx, [given, file]) {
      const { path, parent, name } = splitPoolPath(given);
      const config = await loadConfigFile(ctx, file, loadRespoolConfig);
      if (!config) return 1;
      const parentGiven = parentInFile(file, config);
      if (parentGiven) throw new UsageError(parentGiven);
      if (config.name !== name) {
        throw new UsageError(
          `${file}: name: got "${config.name}", expected "${name}" (the last part of ${path})`,
        );
      }
      const parentId = await respoolId(ctx, parent);
      const res = await ctx.client.call<{ result: { value: string } }>(`${RESPOOL}::CreateResourcePool`, {
        config: { ...config, parent: { value: parentId } },
      });
      ctx.out(ctx.json ? JSON.stringify(res) : `Resource Pool ${res.result.value} created at ${path}`);
      return 0;
    },
  },
  {
    name: "respool update",
    args: ["PATH", "FILE"],
    summary: "replace a resource pool's config (--force skips the tree checks)",
    options: { force: { type: "boolean", short: "f", default: false } },
    async run(ctx, [given, file], opts) {
      const { path, parent } = splitPoolPath(given);
      const config = await loadConfigFile(ctx, file, loadRespoolConfig);
      if (!config) return 1;
      const id = await respoolId(ctx, path);
      const parentId = await respoolId(ctx, parent);
      await ctx.client.call(`${RESPOOL}::UpdateResourcePool`, {
        id: { value: id },
        config: { ...config, parent: { value: parentId } },
        Force: opts.force === true,
      });
      ctx.out(ctx.json ? JSON.stringify({ id: { value: id } }) : `Resource Pool ${id} updated at ${path}`);
      return 0;
    },
  },
  {
    name: "respool delete",
    args: ["PATH"],
    summary: "delete an idle leaf resource pool",
    async run(ctx, [given]) {
      const { path } = splitPoolPath(given);
      await ctx.client.call(`${RESPOOL}::DeleteResourcePool`, { path: { value: path } });
      ctx.out(ctx.json ? "{}" : `Resource Pool ${path} deleted`);
      return 0;
    },
  },
  {
    name: "respool dump",
    args: [],
    summary: "print every resource pool with its config and usage (--format yaml|json)",
    options: { format: { type: "string", default: "yaml" } },
    async run(ctx, _args, opts) {
      const format = String(opts.format);
      if (!["yaml", "yml", "json"].includes(format)) {
        throw new UsageError(`--format: got "${format}", expected yaml or json`);
      }
      const res = await ctx.client.call<{ resourcePools: Record<string, unknown>[] }>(
        `${RESPOOL}::Query`,
        {},
      );
      ctx.out(ctx.json || format === "json" ? JSON.stringify(res, null, 2) : stringify(res).trimEnd());
      return 0;
    },
  },
  {
    name: "respool validate",
    args: ["FILE"],
    summary: "check a resource pool config file offline; exits non-zero with the errors if it is invalid",
    offline: true,
    async run(ctx, [file]) {
      const config = await loadConfigFile(ctx, file, loadRespoolConfig);
      if (!config) return 1;
      const parentGiven = parentInFile(file, config);
      if (parentGiven) {
        ctx.err(parentGiven);
        return 1;
      }
      ctx.out(
        ctx.json ? JSON.stringify(config, null, 2) : `${file}: valid resource pool "${config.name}"`,
      );
      return 0;
    },
  },
  {
    name: "respool entitlement",
    args: ["FILE"],
    summary: "what-if: compute Peloton's entitlement for a pool tree, capacity and demands, offline",
    offline: true,
    async run(ctx, [file]) {
      const parsed = parseWhatIf(await readInput(file), file);
      if (!parsed.ok) {
        for (const e of parsed.errors) ctx.err(formatIssue(e));
        return 1;
      }
      for (const w of parsed.warnings) ctx.err(formatIssue(w));
      const result = runWhatIf(parsed.value);
      for (const w of result.warnings) ctx.err(formatIssue(w));
      ctx.out((ctx.json ? formatWhatIfJson(result) : formatWhatIfTable(result, TERMINAL_TEXT)).trimEnd());
      return 0;
    },
  },
];
