// Formatting for people: sizes, durations, and times in the browser's zone.

export function bytes(n: number | null | undefined): string {
  if (n === null || n === undefined) return "—";
  if (n < 1024) return `${n} B`;
  const units = ["KB", "MB", "GB", "TB"];
  let v = n / 1024;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v < 10 ? v.toFixed(1) : Math.round(v)} ${units[i]}`;
}

export function duration(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || !isFinite(ms) || ms < 0) return "—";
  if (ms < 1000) return `${Math.round(ms)} ms`;
  const s = ms / 1000;
  if (s < 60) return `${s.toFixed(s < 10 ? 1 : 0)} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min ${Math.round(s % 60)} s`;
  return `${Math.floor(m / 60)} h ${m % 60} min`;
}

/** A job's duration: from start to finish, or to now while it runs. */
export function jobDuration(startedAt?: string | null, finishedAt?: string | null, now = Date.now()): string {
  if (!startedAt) return "—";
  const end = finishedAt ? Date.parse(finishedAt) : now;
  return duration(end - Date.parse(startedAt));
}

const local = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "medium" });

const localDay = new Intl.DateTimeFormat(undefined, { dateStyle: "medium" });

export function localDate(iso: string): string {
  return localDay.format(new Date(iso));
}

export function localTime(iso: string): string {
  return local.format(new Date(iso));
}

/** The exact UTC time, shown on hover. */
export function utcTime(iso: string): string {
  return new Date(iso).toISOString().replace("T", " ").replace(/\.\d+Z$/, " UTC").replace(/Z$/, " UTC");
}

export function relative(iso: string, now = Date.now()): string {
  const d = (now - Date.parse(iso)) / 1000;
  if (d < 0) {
    const f = -d;
    if (f < 60) return "in a few seconds";
    if (f < 3600) return `in ${Math.round(f / 60)} min`;
    if (f < 86400) return `in ${Math.round(f / 3600)} h`;
    return `in ${Math.round(f / 86400)} d`;
  }
  if (d < 10) return "just now";
  if (d < 60) return `${Math.round(d)} s ago`;
  if (d < 3600) return `${Math.round(d / 60)} min ago`;
  if (d < 86400) return `${Math.round(d / 3600)} h ago`;
  return localTime(iso);
}

// Made once: a formatter costs far more to make than to use, and lists format a
// number on every row.
const numbers = new Intl.NumberFormat();

export function number(n: number | null | undefined): string {
  if (n === null || n === undefined) return "—";
  return numbers.format(n);
}
