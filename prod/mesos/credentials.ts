/** HTTP basic authentication to a Mesos master and its agents: the header, and what a refusal means. */
import { encodeBase64 } from "./protocol.ts";

/** A principal and its secret, as Peloton's `mesos.framework.principal` and secret file give them. */
export interface MesosCredentials {
  principal: string;
  secret: string;
}

/**
 * The `Authorization` header for the credentials (none without them). UTF-8, as RFC 7617 and Mesos's basic
 * authenticator read it, which compares the decoded bytes.
 */
export function authorization(credentials: MesosCredentials | undefined): Record<string, string> {
  if (!credentials) return {};
  const text = `${credentials.principal}:${credentials.secret}`;
  return { authorization: `Basic ${encodeBase64(new TextEncoder().encode(text))}` };
}

/** A master or agent refused a request's credentials (401), or its principal (403): the operator must act. */
export class MesosAuthError extends Error {
  override readonly name = "MesosAuthError";
  constructor(readonly status: number, message: string) {
    super(message);
  }
}

/**
 * What a 401 or 403 from `who` ("the master", "agent 10.0.0.1:5051") says about the credentials sent, or
 * undefined for any other status. Never names the secret.
 */
export function authRefusal(
  status: number,
  body: string,
  credentials: MesosCredentials | undefined,
  who: string,
): MesosAuthError | undefined {
  const said = body.trim() ? `: ${body.trim()}` : "";
  const principal = JSON.stringify(credentials?.principal);
  if (status === 401) {
    return new MesosAuthError(
      status,
      credentials
        ? `${who} refused the credentials of principal ${principal} (HTTP 401${said}); check ` +
          "--mesos-principal and --mesos-secret-file against the master's credentials"
        : `${who} requires HTTP authentication (HTTP 401${said}) and no credentials were given; give them ` +
          "with --mesos-principal and --mesos-secret-file",
    );
  }
  if (status === 403) {
    return new MesosAuthError(
      status,
      `${who} does not authorize ${credentials ? `principal ${principal}` : "unauthenticated requests"} ` +
        `(HTTP 403${said}); check the master's ACLs`,
    );
  }
  return undefined;
}
