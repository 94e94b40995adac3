/** YARPC-style error responses: the code in the body and the `Rpc-Status` header, with an HTTP status. */
import type { ApiErrorCode } from "../../core/messages.ts";

export const API_STATUS: Record<ApiErrorCode, number> = {
  "invalid-argument": 400,
  "not-found": 404,
  "already-exists": 409,
  "failed-precondition": 400,
  "out-of-range": 400,
  aborted: 409,
  // gRPC's CANCELLED, as nginx's "client closed request".
  cancelled: 499,
  unimplemented: 501,
  internal: 500,
  unavailable: 503,
};

export function rpcError(code: ApiErrorCode, message: string): Response {
  return Response.json({ code, message }, { status: API_STATUS[code], headers: { "rpc-status": code } });
}
