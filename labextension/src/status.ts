/**
 * The status bar item: the language servers of every kernel (and of the Jupyter server) that
 * run, start or are broken, and the current errors across them, from `GET ipylsp/api/status`
 * every few seconds and whenever a report renders, plus the errors in the open notebooks'
 * cells (their kernels' marks: files only are counted by the route), so it counts what the
 * Problems panel lists. A click lists them in a popup, with why the Jupyter server's own
 * servers run in it rather than in the user's broker, when they do. A failed
 * request is a quiet state, never a dialog. (Its text never says "Idle": galata waits for the
 * kernel's "Idle" in the status bar.)
 */

import { Poll } from '@lumino/polling';
import { showPopup, Popup } from '@jupyterlab/statusbar';
import { Widget } from '@lumino/widgets';

import { fetchStatus, ServerStatus, Status } from './api';

const SHOWN_STATES = ['running', 'starting', 'broken'];

function plural(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? '' : 's'}`;
}

/**
 * `ipylsp: 2 running, 1 broken · 3 errors`; `ipylsp: no servers · 0 errors`. `cellErrors`:
 * the errors in notebooks' cells, added to the files' errors.
 */
export function statusText(status: Status, cellErrors = 0): string {
  const parts = SHOWN_STATES.flatMap(state => {
    const n = status.servers.filter(s => s.state === state).length;
    return n ? [`${n} ${state}`] : [];
  });
  const errors = plural(status.errors + cellErrors, 'error');
  return `ipylsp: ${parts.length ? parts.join(', ') : 'no servers'} · ${errors}`;
}

function cell(tag: 'td' | 'th', text: string, className = ''): HTMLElement {
  const node = document.createElement(tag);
  node.textContent = text;
  if (className) {
    node.className = className;
  }
  return node;
}

/** The popup's body: one table row per server process. */
class StatusDetails extends Widget {
  constructor(private readonly _onProblems: () => void) {
    super();
    this.addClass('jp-ipylsp-status-popup');
  }

  showStatus(status: Status | null, error: string, cellErrors = 0): void {
    const node = this.node;
    node.textContent = '';
    const title = document.createElement('div');
    title.className = 'jp-ipylsp-status-title';
    title.textContent = 'ipylsp language servers';
    node.appendChild(title);
    if (!status) {
      node.appendChild(this._line('jp-ipylsp-status-unavailable', `status unavailable: ${error}`));
      return;
    }
    const shown = status.servers.filter(s => s.state !== 'stopped');
    if (shown.length) {
      const table = document.createElement('table');
      table.className = 'jp-ipylsp-status-table';
      const head = document.createElement('tr');
      for (const h of ['server', 'state', 'workspace', 'pid', 'owner']) {
        head.appendChild(cell('th', h));
      }
      table.appendChild(head);
      for (const s of shown) {
        table.appendChild(this._row(s));
      }
      node.appendChild(table);
    } else {
      node.appendChild(this._line('jp-ipylsp-status-none', 'no language server is running'));
    }
    node.appendChild(
      this._line(
        'jp-ipylsp-status-installed',
        `installed: ${status.installed.length ? status.installed.join(', ') : 'none'}`
      )
    );
    node.appendChild(
      this._line(
        'jp-ipylsp-status-errors',
        `${plural(status.errors + cellErrors, 'error')} across kernels`
      )
    );
    if (status.in_process) {
      node.appendChild(
        this._line(
          'jp-ipylsp-status-in-process',
          `the Jupyter server's servers run in it, not in your broker: ${status.in_process}`
        )
      );
    }
    const button = document.createElement('button');
    button.type = 'button';
    button.className = 'jp-ipylsp-status-problems jp-mod-styled';
    button.textContent = 'Show Problems';
    button.addEventListener('click', () => {
      this._onProblems();
    });
    node.appendChild(button);
  }

  private _row(s: ServerStatus): HTMLElement {
    const row = document.createElement('tr');
    row.className = `jp-ipylsp-status-server jp-ipylsp-state-${s.state}`;
    row.appendChild(cell('td', s.server));
    const state = cell('td', s.state);
    if (s.detail && s.detail !== s.state) {
      state.title = s.detail;
      state.textContent = `${s.state} (${s.detail})`;
    }
    row.appendChild(state);
    row.appendChild(cell('td', s.root));
    row.appendChild(cell('td', s.pid === null ? '' : String(s.pid)));
    row.appendChild(cell('td', s.owner === null ? '' : String(s.owner)));
    return row;
  }

  private _line(className: string, text: string): HTMLElement {
    const node = document.createElement('div');
    node.className = className;
    node.textContent = text;
    return node;
  }
}

export class StatusItem extends Widget {
  constructor(options: { interval?: number; onProblems: () => void }) {
    super();
    this.addClass('jp-ipylsp-status');
    this.addClass('jp-StatusBar-TextItem');
    this.node.title = 'ipylsp: language servers of every kernel';
    this.node.textContent = 'ipylsp: …';
    this._onProblems = () => {
      this._popup?.dispose();
      options.onProblems();
    };
    const interval = options.interval ?? 5000;
    this._poll = new Poll({
      factory: () => this._update(),
      frequency: { interval, backoff: true, max: 60 * 1000 },
      name: 'ipylsp:status',
      standby: 'when-hidden'
    });
    this.node.addEventListener('click', () => {
      this._showPopup();
    });
  }

  /** The last status, or null while unknown or unavailable. */
  get status(): Status | null {
    return this._status;
  }

  /** The errors in the open notebooks' cells (the route counts files only). */
  set cellErrors(value: number) {
    if (value !== this._cellErrors) {
      this._cellErrors = value;
      this._render();
    }
  }

  /** Ask again now (a report rendered). */
  refresh(): void {
    void this._poll.refresh();
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    this._poll.dispose();
    this._popup?.dispose();
    super.dispose();
  }

  private async _update(): Promise<void> {
    try {
      this._status = await fetchStatus();
      this._error = '';
    } catch (error) {
      this._status = null;
      this._error = error instanceof Error ? error.message : String(error);
    }
    this._render();
    if (this._error) {
      throw new Error(this._error); // back off while the routes do not answer
    }
  }

  private _render(): void {
    const unavailable = this._status === null;
    this.toggleClass('jp-mod-unavailable', unavailable);
    const broken = !!this._status?.servers.some(s => s.state === 'broken');
    this.toggleClass('jp-mod-broken', broken);
    this.toggleClass('jp-mod-errors', !!this._status?.errors || this._cellErrors > 0);
    if (this._status) {
      this.node.textContent = statusText(this._status, this._cellErrors);
      this.node.title = 'ipylsp: language servers of every kernel (click for the list)';
    } else {
      this.node.textContent = 'ipylsp: no status';
      this.node.title = `ipylsp: status unavailable (${this._error})`;
    }
    if (this._popup && !this._popup.isDisposed && this._details) {
      this._details.showStatus(this._status, this._error, this._cellErrors);
    }
  }

  private _showPopup(): void {
    if (this._popup && !this._popup.isDisposed) {
      this._popup.dispose();
      return;
    }
    // The popup disposes its body when it closes: a new one each time.
    this._details = new StatusDetails(this._onProblems);
    this._details.showStatus(this._status, this._error, this._cellErrors);
    this._popup = showPopup({
      body: this._details,
      anchor: this,
      align: 'left',
      hasDynamicSize: true
    });
    this.refresh();
  }

  private _cellErrors = 0;
  private _details: StatusDetails | null = null;
  private _onProblems: () => void;
  private _popup: Popup | null = null;
  private _poll: Poll;
  private _status: Status | null = null;
  private _error = '';
}
