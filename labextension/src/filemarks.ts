/**
 * Marks in file editors: what the kernels' last checks found in the file (all of it, up to
 * `MAX_FILE_MARKS`, not a report's first 20), read from the store through
 * `GET ipylsp/api/diagnostics?cached=1` (no check by the Jupyter server's own service: that
 * would start servers at its root, the home directory on JupyterHub). Asked when the
 * editor opens the file, after it saves it, and when a report names it (a cell wrote it).
 *
 * The store's answers are for the text on disk; the editor may hold other text (unsaved
 * edits, or a version older than a cell's write): the marks are moved onto it, those on
 * changed lines left out. An answer for another text than the disk's (the kernel's store
 * write not in yet, or a write nothing checked) is asked again a few times, then left: the
 * marks drawn keep following the text until the next check.
 */

import type { IDocumentWidget } from '@jupyterlab/docregistry';
import type { Contents } from '@jupyterlab/services';
import type { FileEditor } from '@jupyterlab/fileeditor';

import { fetchStoredDiagnostics } from './api';
import { followText, MarkStore, marksOf } from './marks';
import type { Diagnostic } from './schema';

/** How long to wait before asking again for an answer that is not the disk's text yet. */
const RETRIES_MS = [150, 400, 1000, 2500];

type EditorWidget = IDocumentWidget<FileEditor>;

export class FileMarks {
  constructor(
    private readonly _store: MarkStore,
    private readonly _contents: Contents.IManager
  ) {}

  /** A file editor opened: its marks now, after each save and when its path changes. */
  watch(widget: EditorWidget): void {
    const context = widget.context;
    const refresh = (): void => {
      void this.refresh(widget);
    };
    void context.ready.then(refresh);
    context.fileChanged.connect(refresh);
    context.pathChanged.connect(refresh);
    this._widgets.add(widget);
    widget.disposed.connect(() => {
      context.fileChanged.disconnect(refresh);
      context.pathChanged.disconnect(refresh);
      this._widgets.delete(widget);
    });
  }

  /** A report named `path` (server-relative): the editors showing it ask again. */
  refreshPath(path: string): void {
    for (const widget of this._widgets) {
      if (widget.context.path === path) {
        void this.refresh(widget);
      }
    }
  }

  /** Ask the store for `widget`'s file; resolves once its marks are set (or left). */
  async refresh(widget: EditorWidget): Promise<void> {
    const generation = (this._generations.get(widget) ?? 0) + 1;
    this._generations.set(widget, generation);
    const context = widget.context;
    for (let attempt = 0; ; attempt++) {
      const path = context.path;
      const found = await this._stored(path);
      if (widget.isDisposed || this._generations.get(widget) !== generation) {
        return;
      }
      if (found === null) {
        return; // nothing to say (no route, outside the root): what is drawn stays
      }
      if (!found.some(d => d.cached?.stale)) {
        const disk = await this._contents
          .get(path, { content: true, type: 'file', format: 'text' })
          .then(model => (typeof model.content === 'string' ? model.content : null))
          .catch(() => null);
        if (disk === null || this._generations.get(widget) !== generation) {
          return;
        }
        const model = widget.content.model;
        this._store.set(model, followText(marksOf(found), disk, model.sharedModel.getSource()));
        return;
      }
      if (attempt >= RETRIES_MS.length) {
        return;
      }
      await new Promise(resolve => setTimeout(resolve, RETRIES_MS[attempt]));
    }
  }

  private async _stored(path: string): Promise<Diagnostic[] | null> {
    try {
      const report = await fetchStoredDiagnostics(path);
      return report.files.flatMap(f => f.diagnostics);
    } catch {
      return null;
    }
  }

  private _generations = new WeakMap<EditorWidget, number>();
  private _widgets = new Set<EditorWidget>();
}
