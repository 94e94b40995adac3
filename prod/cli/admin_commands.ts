/** `peloton admin lock|unlock COMPONENT...`: Peloton's AdminService Lockdown and RemoveLockdown. */
import { ADMIN_SERVICE, LOCK_COMPONENTS } from "../../core/jobmgr/lockdown.ts";
import type { Command } from "./command.ts";

export const adminCommands: Command[] = [
  lockCommand("lock", "Lockdown", "locked down"),
  lockCommand("unlock", "RemoveLockdown", "unlocked"),
];

function lockCommand(word: string, method: string, done: string): Command {
  return {
    name: `admin ${word}`,
    args: ["COMPONENT..."],
    summary: `${word === "lock" ? "lock down" : "lift the lockdown of"} job manager components ` +
      `(${LOCK_COMPONENTS.join(", ")}); stored, so it outlives a restart`,
    async run(ctx, components) {
      const res = await ctx.client.call<{ successes: string[] }>(`${ADMIN_SERVICE}::${method}`, {
        components,
      });
      ctx.out(ctx.json ? JSON.stringify(res, null, 2) : `${res.successes.join(", ")} ${done}`);
      return 0;
    },
  };
}
