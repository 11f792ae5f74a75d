/**
 * The diagnostics JSON, schema "ipylsp.diagnostics/2" (docs/schema.md; /1, without cell ids,
 * is still read: notebooks keep the outputs they saved). Its types are generated from
 * ipylsp/schemas/diagnostics.schema.json (src/generated/). Consumers ignore fields they do
 * not know; `parseReport` checks only what the views rely on.
 */

import type { FileReport, Report, Unknown } from './generated/diagnostics';

export const MIME_TYPE = 'application/vnd.ipylsp.diagnostics+json';
export const SCHEMA = 'ipylsp.diagnostics/2';
/** The versions this extension reads. */
export const SCHEMAS: readonly string[] = ['ipylsp.diagnostics/1', SCHEMA];

export type {
  Cached,
  Diagnostic,
  FileReport,
  Report,
  Severity,
  Summary,
  Unknown
} from './generated/diagnostics';
/** Reasons whose detail is a cause, in parentheses (Python's `UnknownReason.has_cause`). */
export { DETAIL_IS_CAUSE } from './generated/diagnostics';

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The report in `value`, or null when it is not a schema this extension reads. */
export function parseReport(value: unknown): Report | null {
  if (
    !isObject(value) ||
    typeof value.schema !== 'string' ||
    !SCHEMAS.includes(value.schema) ||
    !Array.isArray(value.files)
  ) {
    return null;
  }
  const files = value.files.filter(
    (f): f is FileReport =>
      isObject(f) &&
      typeof f.path === 'string' &&
      typeof f.absolute_path === 'string' &&
      Array.isArray(f.diagnostics)
  );
  return {
    ...(value as unknown as Report),
    files: files.map(f => ({
      ...f,
      servers: Array.isArray(f.servers) ? f.servers : [],
      fixed: Array.isArray(f.fixed) ? f.fixed : [],
      fixed_count: typeof f.fixed_count === 'number' ? f.fixed_count : 0,
      unknown: Array.isArray(f.unknown) ? f.unknown : [],
      omitted: typeof f.omitted === 'number' ? f.omitted : 0
    })),
    notes: Array.isArray(value.notes) ? (value.notes as string[]) : [],
    unknown: Array.isArray(value.unknown) ? (value.unknown as Unknown[]) : []
  };
}
