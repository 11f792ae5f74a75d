/**
 * The output renderer for application/vnd.ipylsp.diagnostics+json. Registered with
 * `safe: true` (it builds its DOM from text only), so it renders in untrusted notebooks too,
 * and its locations open the editor directly (no command links, no trust dialog).
 */

import type { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { ISignal, Signal } from '@lumino/signaling';
import { Widget } from '@lumino/widgets';

import { IRenderOptions, renderReport } from './report';
import { Report, MIME_TYPE, parseReport } from './schema';

/** Emitted whenever a report renders: the status item and the Problems panel refresh. */
export class ReportEvents {
  get rendered(): ISignal<this, Report> {
    return this._rendered;
  }

  emit(report: Report): void {
    this._rendered.emit(report);
  }

  private _rendered = new Signal<this, Report>(this);
}

export class DiagnosticsRenderer extends Widget implements IRenderMime.IRenderer {
  constructor(
    private readonly _options: IRenderOptions,
    private readonly _events: ReportEvents
  ) {
    super();
    this.addClass('jp-ipylsp-output');
  }

  renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    const report = parseReport(model.data[MIME_TYPE]);
    this.node.textContent = '';
    if (!report) {
      const note = document.createElement('div');
      note.className = 'jp-ipylsp-unreadable';
      note.textContent = 'ipylsp: this report uses a schema this extension does not read';
      this.node.appendChild(note);
      return Promise.resolve();
    }
    this.node.appendChild(renderReport(report, this._options));
    this._events.emit(report);
    return Promise.resolve();
  }
}

export function rendererFactory(
  options: IRenderOptions,
  events: ReportEvents
): IRenderMime.IRendererFactory {
  return {
    safe: true,
    mimeTypes: [MIME_TYPE],
    // Before text/html (50): the bundle also holds text/html and text/plain.
    defaultRank: 20,
    createRenderer: () => new DiagnosticsRenderer(options, events)
  };
}
