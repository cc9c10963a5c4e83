// The schema files on their own, as an editor or another tool would use them: registered by
// their file URLs, with relative $refs, and no sluice code involved.
import { readdirSync, readFileSync } from 'node:fs';
import { Ajv2020 } from 'ajv/dist/2020.js';
import t from 'tap';
import { ANNOTATIONS } from '../../src/config/schema.ts';

const DIR = new URL('../../schemas/', import.meta.url);

t.test('a plain ajv validates the examples against schemas/ by file URL', async (t) => {
  const ajv = new Ajv2020({ allErrors: true, strict: false });
  ajv.addVocabulary(ANNOTATIONS);
  for (const name of readdirSync(DIR)) {
    ajv.addSchema(JSON.parse(readFileSync(new URL(name, DIR), 'utf8')), new URL(name, DIR).href);
  }
  const validate = ajv.getSchema(new URL('config.schema.json', DIR).href)!;
  const full = JSON.parse(
    readFileSync(new URL('../../examples/full-config.json', import.meta.url), 'utf8'),
  );
  t.ok(validate(full), JSON.stringify(validate.errors));
  t.notOk(validate({ stream: [{ 'stream-name': 'a', input: [{ type: 'udp', port: 0 }] }] }));
  t.notOk(validate({ 'dvb-adapter': [{ id: 1, name: 'a', type: 3, 'lnb-freq1': 9750 }] }));
});

t.test('every member of every schema file has an apply class and a description', async (t) => {
  let count = 0;
  const visit = (node: unknown, where: string): void => {
    if (Array.isArray(node)) {
      node.forEach((n, i) => {
        visit(n, `${where}/${i}`);
      });
    }
    if (node === null || typeof node !== 'object') return;
    for (const [k, v] of Object.entries(node)) {
      if (
        k === 'properties' &&
        where.split('/').every((p) => !['if', 'then', 'else'].includes(p))
      ) {
        for (const [name, s] of Object.entries(v as Record<string, Record<string, unknown>>)) {
          count++;
          t.match(s['x-apply'], /^(hot|restart|replace|fixed)$/, `${where}/${name} x-apply`);
          t.type(s['description'], 'string', `${where}/${name} description`);
        }
      }
      visit(v, `${where}/${k}`);
    }
  };
  for (const name of readdirSync(DIR))
    visit(JSON.parse(readFileSync(new URL(name, DIR), 'utf8')), name);
  t.ok(count > 300, `${count} members`);
});
