import { useId } from "react";

/** A bar chart drawn as SVG: one bar per point, the values also in a table for screen readers. */
/** format, when given, writes a value with its unit (bytes); otherwise values are numbers followed by unit. */
export function BarChart({ data, unit, label, height = 180, format }: { data: { label: string; value: number }[]; unit: string; label: string; height?: number; format?: (n: number) => string }) {
  const tick = format ?? String;
  const value = format ?? ((n: number) => `${n} ${unit}`);
  const id = useId();
  const max = Math.max(1, ...data.map((d) => d.value));
  const w = 100 / Math.max(1, data.length);
  const ticks = [0, 0.5, 1].map((f) => Math.round(max * f));
  return (
    <figure className="chart" aria-labelledby={id}>
      <figcaption id={id} className="sr-only">{label}</figcaption>
      <div className="chart-body">
        <div className="chart-axis" aria-hidden="true">
          {[...ticks].reverse().map((t) => (
            <span key={t}>{tick(t)}</span>
          ))}
        </div>
        <svg viewBox={`0 0 100 ${height}`} preserveAspectRatio="none" width="100%" height={height} aria-hidden="true">
          {ticks.map((t) => (
            <line key={t} x1="0" x2="100" y1={height - (t / max) * (height - 4)} y2={height - (t / max) * (height - 4)} className="chart-grid" vectorEffect="non-scaling-stroke" />
          ))}
          {data.map((d, i) => {
            const h = (d.value / max) * (height - 4);
            return (
              <rect key={d.label} x={i * w + w * 0.15} width={w * 0.7} y={height - h} height={Math.max(h, d.value ? 1 : 0)} className="chart-bar" rx="0.6">
                <title>{`${d.label}: ${value(d.value)}`}</title>
              </rect>
            );
          })}
        </svg>
      </div>
      <div className="chart-labels" aria-hidden="true">
        <span>{data[0]?.label}</span>
        <span>{data[data.length - 1]?.label}</span>
      </div>
      <table className="sr-only">
        <caption>{label}</caption>
        <tbody>
          {data.map((d) => (
            <tr key={d.label}>
              <th scope="row">{d.label}</th>
              <td>{value(d.value)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </figure>
  );
}
