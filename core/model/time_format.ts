/** Formats virtual or real epoch milliseconds as RFC 3339 without touching the clock. */

/** Days since 1970-01-01 → civil date (Howard Hinnant's `civil_from_days`). */
function civil(days: number): [number, number, number] {
  const z = days + 719468;
  const era = Math.floor(z / 146097);
  const doe = z - era * 146097;
  const yoe = Math.floor(
    (doe - Math.floor(doe / 1460) + Math.floor(doe / 36524) - Math.floor(doe / 146096)) / 365,
  );
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100));
  const mp = Math.floor((5 * doy + 2) / 153);
  const d = doy - Math.floor((153 * mp + 2) / 5) + 1;
  const m = mp < 10 ? mp + 3 : mp - 9;
  return [yoe + era * 400 + (m <= 2 ? 1 : 0), m, d];
}

const pad = (n: number, w = 2) => String(n).padStart(w, "0");

/** `2026-11-22T10:04:05.123Z` for epoch milliseconds (as `Date.prototype.toISOString`). */
export function rfc3339(ms: number): string {
  const days = Math.floor(ms / 86_400_000);
  const rest = ms - days * 86_400_000;
  const [y, mo, d] = civil(days);
  const h = Math.floor(rest / 3_600_000);
  const mi = Math.floor((rest % 3_600_000) / 60_000);
  const s = Math.floor((rest % 60_000) / 1000);
  const milli = Math.floor(rest % 1000);
  return `${pad(y, 4)}-${pad(mo)}-${pad(d)}T${pad(h)}:${pad(mi)}:${pad(s)}.${pad(milli, 3)}Z`;
}

/** Civil date → days since 1970-01-01 (Howard Hinnant's `days_from_civil`). */
function days(y: number, m: number, d: number): number {
  const yy = m <= 2 ? y - 1 : y;
  const era = Math.floor(yy / 400);
  const yoe = yy - era * 400;
  const doy = Math.floor((153 * (m > 2 ? m - 3 : m + 9) + 2) / 5) + d - 1;
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy;
  return era * 146097 + doe - 719468;
}

const RFC3339 =
  /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(?:([Zz])|([+-])(\d{2}):(\d{2}))$/;

/**
 * Epoch milliseconds of an RFC 3339 time (protobuf's Timestamp in JSON: `2026-11-22T10:04:05.123Z`, any
 * fraction of a second, `Z` or an offset); undefined when it is not one.
 */
export function parseRfc3339(s: string): number | undefined {
  const m = RFC3339.exec(s);
  if (!m) return undefined;
  const [y, mo, d, h, mi, sec] = m.slice(1, 7).map(Number);
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60) return undefined;
  const milli = m[7] ? Math.floor(Number(`0.${m[7]}`) * 1000) : 0;
  const offsetMin = m[9] ? (m[9] === "-" ? -1 : 1) * (Number(m[10]) * 60 + Number(m[11])) : 0;
  return ((days(y, mo, d) * 24 + h) * 60 + mi - offsetMin) * 60_000 + sec * 1000 + milli;
}
