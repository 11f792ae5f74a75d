/**
 * The Problems panel: the workspace's current problems from `GET ipylsp/api/diagnostics`,
 * grouped by file, each location opening the editor, then the open notebooks' cells'
 * problems (their kernels' marks) grouped under each notebook, each location moving the
 * cursor into the cell. Refreshed when a report renders (the report's files are asked for
 * first, so the server knows them), when it is shown, and from its refresh button; while
 * hidden it only remembers that it is stale. The cells' part follows the marks as they change.
 */

import { refreshIcon, ToolbarButton } from '@jupyterlab/ui-components';
import { Message } from '@lumino/messaging';
import { Panel, Widget } from '@lumino/widgets';

import { fetchDiagnostics } from './api';
import { countPhrase, ILocation, IRenderOptions, problemRows, renderReport } from './report';
import { FileReport, Report, Severity } from './schema';

/** One notebook's cells with problems, as the panel lists them. */
export interface INotebookProblems {
  /** The notebook's path (server-relative), its group's header. */
  path: string;
  /** Each cell as a report entry (`path` "cell [n]", `cell`, `cell_id`). */
  cells: FileReport[];
  /** Put the cursor at a location of one of its cells. */
  open: (location: ILocation) => void;
}

function plural(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? '' : 's'}`;
}

function severities(files: FileReport[]): Severity[] {
  return files.flatMap(f => problemRows(f.diagnostics).map(row => row[0].severity));
}

/** Errors, one per problem however many servers report it (what the status item counts). */
export function errorCount(files: FileReport[]): number {
  return severities(files).filter(s => s === 'error').length;
}

/**
 * `2 errors and 1 warning in 2 files`, `3 errors in 1 file and 2 cells`, or `No problems`.
 */
export function problemsSummary(report: Report, notebooks: INotebookProblems[] = []): string {
  const cells = notebooks.flatMap(n => n.cells);
  const found = [...severities(report.files), ...severities(cells)];
  const files = report.files.filter(f => f.diagnostics.length).length;
  const omitted = report.files.reduce((n, f) => n + f.omitted, 0);
  if (!found.length && !omitted) {
    return 'No problems';
  }
  const places = [
    ...(files || !cells.length ? [plural(files, 'file')] : []),
    ...(cells.length ? [plural(cells.length, 'cell')] : [])
  ].join(' and ');
  const more = omitted ? ` (${omitted} more not shown)` : '';
  return `${countPhrase(found)} in ${places}${more}`;
}

export class ProblemsPanel extends Panel {
  constructor(
    private readonly _options: IRenderOptions,
    private readonly _notebooks: () => INotebookProblems[] = () => []
  ) {
    super();
    this.id = 'jp-ipylsp-problems';
    this.addClass('jp-ipylsp-problems');
    this.title.caption = 'ipylsp: Problems';

    const header = new Widget();
    header.addClass('jp-ipylsp-problems-header');
    const title = document.createElement('span');
    title.className = 'jp-ipylsp-problems-title';
    title.textContent = 'Problems';
    this._summary.className = 'jp-ipylsp-problems-summary';
    header.node.append(title, this._summary);
    const refresh = new ToolbarButton({
      icon: refreshIcon,
      tooltip: 'Refresh the problems',
      onClick: () => void this.refresh()
    });
    refresh.addClass('jp-ipylsp-problems-refresh');
    this._header.addClass('jp-ipylsp-problems-bar');
    this._header.addWidget(header);
    this._header.addWidget(refresh);
    this._body.addClass('jp-ipylsp-problems-body');
    this.addWidget(this._header);
    this.addWidget(this._body);
    this._summary.textContent = 'not loaded yet';
  }

  /** The cells' problems changed: their part is drawn again (no request). */
  cellsChanged(): void {
    if (this._report !== null) {
      this._show(this._report);
    }
  }

  /** The last report shown (null before the first answer or after a failed one). */
  get report(): Report | null {
    return this._report;
  }

  /**
   * A report rendered: its files (server-relative paths) are asked for first, so the server
   * checks what it does not know yet, then the whole list. While hidden: later.
   */
  reportRendered(report: Report): void {
    for (const file of report.files) {
      if (file.cell !== undefined) {
        continue; // a cell's document is the kernel's, never on disk
      }
      const path = this._options.resolve(file);
      if (path !== null) {
        this._pendingPaths.add(path);
      }
    }
    if (this.isVisible) {
      void this.refresh();
    } else {
      this._stale = true;
    }
  }

  /** Ask the server again; resolves once the panel shows the answer. */
  async refresh(): Promise<void> {
    const generation = ++this._generation;
    const paths = [...this._pendingPaths];
    this._pendingPaths.clear();
    this._stale = false;
    this.addClass('jp-mod-loading');
    try {
      // One file's problems are checked first when unknown or changed on disk.
      await Promise.all(paths.map(path => fetchDiagnostics(path).catch(() => null)));
      const report = await fetchDiagnostics();
      if (generation === this._generation) {
        this._show(report);
      }
    } catch (error) {
      if (generation === this._generation) {
        this._unavailable(error instanceof Error ? error.message : String(error));
      }
    } finally {
      if (generation === this._generation) {
        this.removeClass('jp-mod-loading');
      }
    }
  }

  protected onAfterShow(msg: Message): void {
    super.onAfterShow(msg);
    if (this._stale || this._report === null) {
      void this.refresh();
    }
  }

  private _show(report: Report): void {
    this._report = report;
    this.removeClass('jp-mod-unavailable');
    const notebooks = this._notebooks().filter(n => n.cells.length);
    this._summary.textContent = problemsSummary(report, notebooks);
    this._summary.title = report.root ? `workspace ${report.root}` : '';
    this._body.node.textContent = '';
    this._body.node.appendChild(renderReport(report, this._options));
    for (const notebook of notebooks) {
      const group = document.createElement('div');
      group.className = 'jp-ipylsp-notebook';
      group.dataset.path = notebook.path;
      const header = document.createElement('div');
      header.className = 'jp-ipylsp-notebook-header';
      header.textContent = notebook.path;
      group.appendChild(header);
      const cells: Report = { ...report, files: notebook.cells, notes: [], unknown: [] };
      group.appendChild(
        renderReport(cells, {
          ...this._options,
          openCell: location => {
            notebook.open(location);
          }
        })
      );
      this._body.node.appendChild(group);
    }
  }

  private _unavailable(message: string): void {
    this._report = null;
    this.addClass('jp-mod-unavailable');
    this._summary.textContent = 'Problems unavailable';
    this._summary.title = message;
    this._body.node.textContent = '';
    const note = document.createElement('div');
    note.className = 'jp-ipylsp-problems-unavailable';
    note.textContent = `The ipylsp server extension did not answer: ${message}`;
    this._body.node.appendChild(note);
  }

  private _header = new Panel();
  private _body = new Widget();
  private _summary = document.createElement('span');
  private _report: Report | null = null;
  private _pendingPaths = new Set<string>();
  private _stale = true;
  private _generation = 0;
}
