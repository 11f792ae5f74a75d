/**
 * The diagnostics JSON, schema "ipylsp.diagnostics/2" (docs/schema.md; /1, without cell ids,
 * is still read: notebooks keep the outputs they saved). Consumers ignore fields they do not
 * know; `parseReport` checks only what the views rely on.
 */

export const MIME_TYPE = 'application/vnd.ipylsp.diagnostics+json';
export const SCHEMA = 'ipylsp.diagnostics/2';
/** The versions this extension reads. */
export const SCHEMAS: readonly string[] = ['ipylsp.diagnostics/1', SCHEMA];

export type Severity = 'error' | 'warning' | 'information' | 'hint';

export interface IDiagnostic {
  severity: Severity;
  /** 1-based line. */
  line: number;
  /** 1-based column in Unicode code points. */
  column: number;
  end_line: number;
  end_column: number;
  message: string;
  code: string | null;
  source: string | null;
  server: string;
  /** On a diagnostic that repeats another server's: the index of the first one. */
  same_as?: number;
  /** Not a live answer: the server's stored one (issue 14). */
  cached?: ICached;
}

export interface ICached {
  source: 'cache';
  /** ISO 8601, when the server answered. */
  written_at: string;
  age_s: number;
  /** The file's text changed since the server answered. */
  stale: boolean;
}

export interface IUnknown {
  server: string;
  reason: string;
  detail: string;
  hint: string;
}

export interface IFileReport {
  path: string;
  absolute_path: string;
  /** A notebook cell's entry: its execution count (`path` is then "cell [n]"). */
  cell?: number;
  /** A notebook cell's entry: the cell's id, when the front end sent one (schema /2). */
  cell_id?: string;
  /** "cache" when every shown diagnostic is a stored answer, "mixed" when some are. */
  source?: 'cache' | 'mixed';
  servers: string[];
  diagnostics: IDiagnostic[];
  fixed: IDiagnostic[];
  fixed_count: number;
  unknown: IUnknown[];
  omitted: number;
}

export interface IReport {
  schema: string;
  root: string | null;
  severity: string;
  files: IFileReport[];
  notes: string[];
  unknown: IUnknown[];
  summary: {
    errors: number;
    warnings: number;
    fixed: number;
    unknown: number;
    shown: number;
    omitted: number;
  };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The report in `value`, or null when it is not a schema this extension reads. */
export function parseReport(value: unknown): IReport | null {
  if (
    !isObject(value) ||
    typeof value.schema !== 'string' ||
    !SCHEMAS.includes(value.schema) ||
    !Array.isArray(value.files)
  ) {
    return null;
  }
  const files = value.files.filter(
    (f): f is IFileReport =>
      isObject(f) &&
      typeof f.path === 'string' &&
      typeof f.absolute_path === 'string' &&
      Array.isArray(f.diagnostics)
  );
  return {
    ...(value as unknown as IReport),
    files: files.map(f => ({
      ...f,
      servers: Array.isArray(f.servers) ? f.servers : [],
      fixed: Array.isArray(f.fixed) ? f.fixed : [],
      fixed_count: typeof f.fixed_count === 'number' ? f.fixed_count : 0,
      unknown: Array.isArray(f.unknown) ? f.unknown : [],
      omitted: typeof f.omitted === 'number' ? f.omitted : 0
    })),
    notes: Array.isArray(value.notes) ? (value.notes as string[]) : [],
    unknown: Array.isArray(value.unknown) ? (value.unknown as IUnknown[]) : []
  };
}
