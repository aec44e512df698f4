import { useId } from 'preact/hooks';

/**
 * A grouped bar chart in SVG (no chart library: a few bars need no more), with the numbers in a
 * table beside it for screen readers and anyone who prefers them.
 */
export interface Series {
  name: string;
  className: string;
  values: number[];
}

export function BarChart(props: { title: string; labels: string[]; series: Series[] }) {
  const { labels, series } = props;
  const titleId = useId();
  // Many periods: every label would overlap, so about six are written (the table has them all).
  const every = Math.ceil(labels.length / 6);
  const max = Math.max(1, ...series.flatMap((s) => s.values));
  const width = 560;
  const height = 220;
  const pad = { top: 16, right: 12, bottom: 28, left: 36 };
  const plotH = height - pad.top - pad.bottom;
  const group = (width - pad.left - pad.right) / labels.length;
  // Narrow groups (a month of days) keep a quarter of their width as the gap between them.
  const bar = Math.min(40, (group - Math.min(16, group / 4)) / series.length);
  const ticks = [...new Set([0, Math.round(max / 2), max])];
  return (
    <figure class="chart">
      <svg viewBox={`0 0 ${width} ${height}`} role="img" aria-labelledby={titleId}>
        <title id={titleId}>{props.title}</title>
        {ticks.map((t) => {
          const y = pad.top + plotH - (t / max) * plotH;
          return (
            <g key={t}>
              <line x1={pad.left} x2={width - pad.right} y1={y} y2={y} class="grid" />
              <text x={pad.left - 6} y={y + 4} text-anchor="end" class="axis">
                {t}
              </text>
            </g>
          );
        })}
        {labels.map((label, i) => (
          <g key={label}>
            {series.map((s, j) => {
              const h = (s.values[i]! / max) * plotH;
              const x = pad.left + i * group + (group - bar * series.length) / 2 + j * bar;
              return (
                <rect
                  key={s.name}
                  x={x}
                  y={pad.top + plotH - h}
                  width={Math.max(1, bar - Math.min(2, bar / 5))}
                  height={h}
                  class={s.className}
                >
                  <title>{`${label}, ${s.name}: ${s.values[i]}`}</title>
                </rect>
              );
            })}
            {i % every === 0 && (
              <text x={pad.left + i * group + group / 2} y={height - 8} text-anchor="middle" class="axis">
                {label}
              </text>
            )}
          </g>
        ))}
      </svg>
      <figcaption>
        {series.map((s) => (
          <span key={s.name} class="legend">
            <span class={`swatch ${s.className}`} aria-hidden="true" />
            {s.name}
          </span>
        ))}
      </figcaption>
      <table class="sr-only">
        <caption>{props.title}</caption>
        <thead>
          <tr>
            <th scope="col">Period</th>
            {series.map((s) => (
              <th scope="col" key={s.name}>
                {s.name}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {labels.map((label, i) => (
            <tr key={label}>
              <th scope="row">{label}</th>
              {series.map((s) => (
                <td key={s.name}>{s.values[i]}</td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </figure>
  );
}
