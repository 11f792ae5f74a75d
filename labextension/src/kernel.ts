/**
 * Asking a notebook's kernel for its cells' marks (schema ipylsp.marks/1, docs/schema.md):
 * a silent execute request (no history, no execution count, no cell hooks) whose user
 * expression calls `ipylsp.ipython.marks` when the kernel has loaded ipylsp, else answers
 * None. The kernel knows what ran; the Jupyter server's own service is never asked.
 */

import type { Kernel, KernelMessage } from '@jupyterlab/services';

import type { CellMarks, MarksAnswer } from './generated/marks';

export const MARKS_MIME = 'application/vnd.ipylsp.marks+json';
export const MARKS_SCHEMA = 'ipylsp.marks/1';
const STATES: readonly MarksAnswer['state'][] = [
  'ready',
  'not loaded',
  'no cells checked',
  'failed'
];

export type { CellMarks, MarksAnswer } from './generated/marks';

/** A Python string literal of `text` (JSON's escapes are Python's). */
function literal(text: string): string {
  return JSON.stringify(text);
}

const LOADED = "'ipylsp.ipython.extension' in __import__('sys').modules";
const MODULE = "__import__('ipylsp.ipython.marks', fromlist=['marks'])";

export function marksExpression(token: string, since: number): string {
  return `${MODULE}.marks(${literal(token)}, ${Math.floor(since)}) if ${LOADED} else None`;
}

export function preflightExpression(cellId: string, code: string): string {
  return `${MODULE}.preflight(${literal(cellId)}, ${literal(code)}) if ${LOADED} else None`;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function parseMarks(value: unknown): MarksAnswer | null {
  if (!isObject(value) || value.schema !== MARKS_SCHEMA || !Array.isArray(value.cells)) {
    return null;
  }
  const cells = value.cells.filter(
    (c): c is CellMarks =>
      isObject(c) && typeof c.source === 'string' && Array.isArray(c.diagnostics)
  );
  return {
    schema: MARKS_SCHEMA,
    state: STATES.find(state => state === value.state) ?? 'ready',
    token: typeof value.token === 'string' ? value.token : '',
    generation: typeof value.generation === 'number' ? value.generation : 0,
    complete: value.complete === true,
    preflight: value.preflight === true,
    cells,
    unknown: Array.isArray(value.unknown) ? (value.unknown as string[]) : [],
    error: typeof value.error === 'string' ? value.error : undefined
  };
}

/**
 * The kernel's answer to `expression`, or null: no ipylsp there (not installed, not loaded),
 * or the request failed (the kernel went away: its connection cancels the request).
 *
 * The answer is read from the execute reply (the shell channel) as soon as it arrives, not
 * from the request's `done`, which also waits for the kernel's "idle" on iopub: a kernel just
 * started can send that before the server has subscribed to its iopub, and a request waiting
 * for it would wait forever (and every later ask behind it).
 */
export function askKernel(
  kernel: Kernel.IKernelConnection,
  expression: string
): Promise<MarksAnswer | null> {
  const content: KernelMessage.IExecuteRequestMsg['content'] = {
    code: '',
    silent: true,
    store_history: false,
    allow_stdin: false,
    stop_on_error: false,
    user_expressions: { ipylsp: expression }
  };
  return new Promise(resolve => {
    let future: ReturnType<Kernel.IKernelConnection['requestExecute']>;
    try {
      future = kernel.requestExecute(content, true);
    } catch {
      resolve(null); // the connection is disposed
      return;
    }
    future.onReply = reply => {
      resolve(answerOf(reply));
      future.dispose(); // its "idle" is not waited for
    };
    // `done` comes after the reply (already answered) or is cancelled: the kernel restarted,
    // changed or went away, or the future was disposed on its reply
    future.done.catch(() => {
      resolve(null);
    });
  });
}

/** Never throws: a throw in `onReply` would leave the future neither replied nor done (the
 * ask, and every later one, would wait forever). */
function answerOf(reply: KernelMessage.IExecuteReplyMsg | undefined): MarksAnswer | null {
  if (!reply || reply.content.status !== 'ok') {
    return null;
  }
  const expressions: unknown = reply.content.user_expressions;
  const value = isObject(expressions) ? expressions.ipylsp : undefined;
  if (!isObject(value) || value.status !== 'ok' || !isObject(value.data)) {
    return null;
  }
  return parseMarks(value.data[MARKS_MIME]);
}

/** How long the kernel's own "kernel_info" answer is waited for when its spec does not say
 * its language (the same wait JupyterLab gives it before it sends queued messages anyway). */
const INFO_WAIT_MS = 3000;

/**
 * The kernel's language: its spec's (the server's kernelspecs, over HTTP), else what the
 * kernel said in its "kernel_info" reply, else null. That reply is never waited for without
 * a bound: it too completes only with the kernel's "idle" on iopub (see `askKernel`).
 */
export async function kernelLanguage(kernel: Kernel.IKernelConnection): Promise<string | null> {
  const spec = await kernel.spec.catch(() => undefined);
  if (spec?.language) {
    return spec.language.toLowerCase();
  }
  let timer = 0;
  const waited = new Promise<null>(resolve => {
    timer = window.setTimeout(() => {
      resolve(null);
    }, INFO_WAIT_MS);
  });
  const info = await Promise.race([kernel.info.catch(() => null), waited]);
  window.clearTimeout(timer);
  return info?.language_info.name.toLowerCase() ?? null;
}
