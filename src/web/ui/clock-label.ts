// The chart's time axis labels: the time of day only. uPlot's default puts the date before
// the first label of each day and packs labels so tight they ran together on a narrow chart
// (`12/7/26 8:59pm9:00pm`, issue 36); a chart of the last minutes needs no date.

/** `sec` (Unix seconds) as the viewer's local time of day, to the second. */
export function clockLabel(sec: number): string {
  return new Date(sec * 1000).toLocaleTimeString([], {
    hour: '2-digit',
    minute: '2-digit',
    second: '2-digit',
  });
}
