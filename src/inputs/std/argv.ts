// Splits an argument line the way a POSIX shell would split words — single quotes, double
// quotes, backslash escapes — without expanding anything. The result goes to spawn() as argv.

export function splitArgs(line: string): string[] {
  const out: string[] = [];
  let cur = '';
  let inWord = false;
  let quote: '' | "'" | '"' = '';
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (quote === "'") {
      if (c === "'") quote = '';
      else cur += c;
      continue;
    }
    if (quote === '"') {
      if (c === '"') quote = '';
      else if (c === '\\' && i + 1 < line.length && '"\\$`\n'.includes(line[i + 1]!)) {
        const n = line[++i]!;
        if (n !== '\n') cur += n;
      } else cur += c;
      continue;
    }
    if (c === "'" || c === '"') {
      quote = c;
      inWord = true;
    } else if (c === '\\') {
      if (i + 1 < line.length) {
        const n = line[++i]!;
        if (n !== '\n') cur += n;
      }
      inWord = true;
    } else if (c === ' ' || c === '\t' || c === '\n') {
      if (inWord) out.push(cur);
      cur = '';
      inWord = false;
    } else {
      cur += c;
      inWord = true;
    }
  }
  if (quote)
    throw new Error(`unterminated ${quote === "'" ? 'single' : 'double'} quote in arguments`);
  if (inWord) out.push(cur);
  return out;
}
