/**
 * The ipylsp server extension's routes under `{baseUrl}ipylsp/api/`, through Jupyter's
 * ServerConnection (token and XSRF apply).
 */

import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';

import { Report, parseReport, SCHEMA } from './schema';

import type { Status } from './generated/status';

export type { ServerState, ServerStatus, Status } from './generated/status';

/** A failed request: the status and the route's own message when it gave one. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string
  ) {
    super(message);
  }
}

async function getJSON(endpoint: string, query: Record<string, string> = {}): Promise<unknown> {
  const settings = ServerConnection.makeSettings();
  const search = new URLSearchParams(query).toString();
  const url = URLExt.join(settings.baseUrl, 'ipylsp/api', endpoint) + (search ? `?${search}` : '');
  let response: Response;
  try {
    response = await ServerConnection.makeRequest(url, { method: 'GET' }, settings);
  } catch (error) {
    throw new ApiError(0, `no answer from the Jupyter server (${String(error)})`);
  }
  let body: unknown = null;
  try {
    body = await response.json();
  } catch {
    body = null;
  }
  if (!response.ok) {
    const error = (body as { error?: { message?: unknown } } | null)?.error;
    const message =
      typeof error?.message === 'string'
        ? error.message
        : response.status === 404
          ? 'the ipylsp server extension is not enabled'
          : `HTTP ${response.status}`;
    throw new ApiError(response.status, message);
  }
  return body;
}

export async function fetchStatus(): Promise<Status> {
  const body = (await getJSON('status')) as Partial<Status> | null;
  return {
    servers: Array.isArray(body?.servers) ? body.servers : [],
    installed: Array.isArray(body?.installed) ? body.installed : [],
    errors: typeof body?.errors === 'number' ? body.errors : 0
  };
}

/** The current problems (schema ipylsp.diagnostics/2): of `path` (server-relative) or all. */
export async function fetchDiagnostics(path?: string): Promise<Report> {
  const query: Record<string, string> = path === undefined ? {} : { path };
  return diagnosticsFrom(query);
}

/** The most problems one file editor is given marks for (a report lists 20). */
export const MAX_FILE_MARKS = 1000;

/**
 * What the store holds for `path` (server-relative): every server's latest answer, from any
 * kernel, each marked cached (stale when the file changed since), up to `MAX_FILE_MARKS`;
 * no server is started.
 */
export async function fetchStoredDiagnostics(path: string): Promise<Report> {
  return diagnosticsFrom({
    path,
    cached: '1',
    severity: 'all',
    max_per_file: String(MAX_FILE_MARKS)
  });
}

async function diagnosticsFrom(query: Record<string, string>): Promise<Report> {
  const report = parseReport(await getJSON('diagnostics', query));
  if (!report) {
    throw new ApiError(200, `the answer is not ${SCHEMA}`);
  }
  return report;
}
