/** Where the Mesos framework id is kept between runs: losing it orphans every running task. */

/** Where the framework id lives between runs. */
export interface FrameworkIdStore {
  load(): Promise<string | undefined>;
  save(id: string): Promise<void>;
  /** Forgets the id: the master removed the framework, and that id can never subscribe again. */
  clear?(): Promise<void>;
}

export class MemoryFrameworkIdStore implements FrameworkIdStore {
  constructor(public id?: string) {}
  load(): Promise<string | undefined> {
    return Promise.resolve(this.id);
  }
  save(id: string): Promise<void> {
    this.id = id;
    return Promise.resolve();
  }
  clear(): Promise<void> {
    this.id = undefined;
    return Promise.resolve();
  }
}

/** Keeps the id in a small JSON file (tools and tests; the daemons keep it in the store). */
export class FileFrameworkIdStore implements FrameworkIdStore {
  constructor(readonly path: string) {}
  async load(): Promise<string | undefined> {
    try {
      const id = JSON.parse(await Deno.readTextFile(this.path)).frameworkId;
      return typeof id === "string" && id ? id : undefined;
    } catch (e) {
      if (e instanceof Deno.errors.NotFound) return undefined;
      throw new Error(`Cannot read the Mesos framework id from ${this.path}: ${(e as Error).message}`);
    }
  }
  async save(id: string): Promise<void> {
    const tmp = `${this.path}.tmp`;
    await Deno.writeTextFile(tmp, JSON.stringify({ frameworkId: id }) + "\n");
    await Deno.rename(tmp, this.path);
  }
  async clear(): Promise<void> {
    await Deno.remove(this.path).catch((e) => {
      if (!(e instanceof Deno.errors.NotFound)) throw e;
    });
  }
}

/** The slice of the cluster tables the framework id needs (Peloton's `frameworks` table). */
export interface FrameworkTable {
  frameworkId(name: string): Promise<string | undefined>;
  saveFrameworkId(name: string, id: string, host: string): Promise<void>;
}

/**
 * Keeps the id in the store's `frameworks` table, so a host manager that takes over on another machine
 * subscribes with the same id and its tasks keep running.
 */
export class StoreFrameworkIdStore implements FrameworkIdStore {
  constructor(readonly table: FrameworkTable, readonly name = "Peloton", readonly host = Deno.hostname()) {}
  async load(): Promise<string | undefined> {
    return (await this.table.frameworkId(this.name)) || undefined;
  }
  save(id: string): Promise<void> {
    return this.table.saveFrameworkId(this.name, id, this.host);
  }
  /** An empty id, which `frameworkId` reads back as none (the table has no delete). */
  clear(): Promise<void> {
    return this.table.saveFrameworkId(this.name, "", this.host);
  }
}
