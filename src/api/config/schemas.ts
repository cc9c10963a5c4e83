// JSON schemas of the /config routes' parameters and answers; @fastify/swagger turns them
// into /openapi.json. Bodies are checked by the config validator, not here.
import { SINGLETON_KINDS } from '../../config/types.ts';
import { COLLECTIONS } from './kinds.ts';

const KIND_DESCRIPTION =
  `Collections: ${[...COLLECTIONS.keys()].join(', ')}. ` +
  `Singletons: ${SINGLETON_KINDS.join(', ')}.`;

export const KIND_PARAMS = {
  type: 'object',
  required: ['kind'],
  properties: { kind: { type: 'string', description: KIND_DESCRIPTION } },
} as const;

export const RECORD_PARAMS = {
  type: 'object',
  required: ['kind', 'id'],
  properties: {
    kind: { type: 'string', description: `A collection: ${[...COLLECTIONS.keys()].join(', ')}` },
    id: {
      type: 'string',
      description:
        'The record id; a user by login; a stream or adaptive group by its name when its id is 0',
    },
  },
} as const;

export const WRITE_QUERY = {
  type: 'object',
  properties: {
    'dry-run': {
      type: 'boolean',
      description: 'Validate and plan the change without writing anything',
    },
  },
} as const;

export const WRITE_RESULT = {
  type: 'object',
  required: ['etag', 'plan'],
  properties: {
    etag: { type: 'string', description: 'ETag of the config after the change' },
    plan: {
      type: 'object',
      additionalProperties: true,
      description: 'What the reconciler will do (format sluice-plan/1, secrets masked)',
    },
    commit: { type: 'string', description: 'Git mode: the commit made for the edit' },
    dryRun: { type: 'boolean' },
  },
} as const;

/** Error answers shown in the OpenAPI description (errors are sent by the error handler). */
export const ERR = {
  400: { $ref: 'ApiError#' },
  404: { $ref: 'ApiError#' },
  409: { $ref: 'ApiError#' },
  412: { $ref: 'ApiError#' },
} as const;
