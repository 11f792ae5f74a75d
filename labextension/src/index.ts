/**
 * ipylsp in JupyterLab (and Notebook 7, the same prebuilt extension): one plugin that holds
 * the document manager, so the diagnostics renderer it registers can open a location in the
 * editor without command links (those raise the trust dialog in untrusted notebooks); the
 * marks in cell and file editors (through JupyterLab's editor extension registry), "check
 * this cell before running", the status bar item and the Problems panel.
 */

import { ILayoutRestorer, JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { ICommandPalette, Notification } from '@jupyterlab/apputils';
import { EditorExtensionRegistry, IEditorExtensionRegistry } from '@jupyterlab/codemirror';
import { PageConfig } from '@jupyterlab/coreutils';
import { IDocumentManager } from '@jupyterlab/docmanager';
import { IEditorTracker } from '@jupyterlab/fileeditor';
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import { IRenderMimeRegistry } from '@jupyterlab/rendermime';
import { ISettingRegistry } from '@jupyterlab/settingregistry';
import { IStatusBar } from '@jupyterlab/statusbar';
import { listIcon } from '@jupyterlab/ui-components';

import { findCell, ICellProblems, NotebookMarks, revealCell } from './cellmarks';
import { FileMarks } from './filemarks';
import { MarksAnswer } from './kernel';
import { diagnosticsOf, MarkStore, marksExtension } from './marks';
import { openLocation } from './open';
import { serverRelative } from './paths';
import { errorCount, INotebookProblems, ProblemsPanel } from './problems';
import { rendererFactory, ReportEvents } from './renderer';
import { countPhrase, ILocation, IRenderOptions, problemRows } from './report';
import { FileReport, MIME_TYPE } from './schema';
import { StatusItem } from './status';

export const PROBLEMS_COMMAND = 'ipylsp:problems';
export const CHECK_CELL_COMMAND = 'ipylsp:check-cell';
const PLUGIN_ID = 'ipylsp:plugin';

/** A cell's problems as a report entry (`cell [n]`), for the Problems panel. */
function cellEntry(path: string, problems: ICellProblems): FileReport {
  const label = problems.count === null ? 'cell [ ]' : `cell [${problems.count}]`;
  return {
    path: label,
    absolute_path: path,
    cell: problems.count ?? 0,
    cell_id: problems.model.id,
    servers: [],
    diagnostics: diagnosticsOf(problems.marks),
    fixed: [],
    fixed_count: 0,
    unknown: [],
    omitted: 0
  };
}

/** What "check this cell before running" says when it is done. */
function preflightMessage(answer: MarksAnswer | null): string {
  if (answer === null || answer.state === 'not loaded') {
    return "ipylsp: this notebook's kernel has not loaded ipylsp (%load_ext ipylsp)";
  }
  if (answer.state !== 'ready' || answer.error) {
    return `ipylsp: the cell could not be checked (${answer.error ?? answer.state})`;
  }
  const rows = problemRows(answer.cells[0]?.diagnostics ?? []);
  const found = rows.length ? countPhrase(rows.map(row => row[0].severity)) : 'no problem';
  const silent = answer.unknown ?? [];
  const unknown = silent.length ? `; no answer from ${silent.join(', ')}` : '';
  return `ipylsp: ${found} in this cell if it ran now (checked, not run)${unknown}`;
}

const plugin: JupyterFrontEndPlugin<void> = {
  id: PLUGIN_ID,
  description:
    'ipylsp diagnostics: the output renderer, marks in editors, a status bar item, a Problems panel.',
  autoStart: true,
  requires: [IDocumentManager, IRenderMimeRegistry],
  optional: [
    IStatusBar,
    ICommandPalette,
    INotebookTracker,
    ILayoutRestorer,
    IEditorExtensionRegistry,
    IEditorTracker,
    ISettingRegistry
  ],
  activate: (
    app: JupyterFrontEnd,
    docManager: IDocumentManager,
    rendermime: IRenderMimeRegistry,
    statusBar: IStatusBar | null,
    palette: ICommandPalette | null,
    notebooks: INotebookTracker | null,
    restorer: ILayoutRestorer | null,
    editorExtensions: IEditorExtensionRegistry | null,
    editors: IEditorTracker | null,
    settingRegistry: ISettingRegistry | null
  ): void => {
    const store = new MarkStore();
    editorExtensions?.addExtension({
      name: 'ipylsp:marks',
      factory: ({ model }) =>
        EditorExtensionRegistry.createImmutableExtension(marksExtension(store, model))
    });
    if (settingRegistry) {
      void settingRegistry
        .load(PLUGIN_ID)
        .then(settings => {
          const apply = (): void => {
            store.enabled = settings.get('marks').composite !== false;
          };
          apply();
          settings.changed.connect(apply);
        })
        .catch((error: unknown) => {
          console.warn('ipylsp: settings not loaded', error);
        });
    }

    // JupyterLab's `serverRoot` writes the home directory as "~"; the server extension gives
    // the root absolute, as the reports' paths are.
    const serverRoot = PageConfig.getOption('ipylspRoot') || PageConfig.getOption('serverRoot');
    const byPanel = new Map<NotebookPanel, NotebookMarks>();
    const goToCell = (panel: NotebookPanel, { file, diagnostic }: ILocation): void => {
      const model = findCell(panel, file.cell_id, file.cell);
      if (model) {
        void revealCell(panel, model, diagnostic.line, diagnostic.column);
      }
    };
    const options: IRenderOptions = {
      resolve: file => serverRelative(file.absolute_path, serverRoot),
      open: (path, { diagnostic }) => {
        openLocation(docManager, path, diagnostic.line, diagnostic.column).catch(
          (error: unknown) => {
            console.warn(`ipylsp: could not open ${path}`, error);
          }
        );
      },
      openCell: (location, from) => {
        const panel = notebooks?.find(p => p.node.contains(from));
        if (panel) {
          goToCell(panel, location);
        }
      }
    };
    const events = new ReportEvents();
    const factory = rendererFactory(options, events);
    rendermime.addFactory(factory);

    const notebookProblems = (): INotebookProblems[] =>
      [...byPanel.values()]
        .filter(marks => marks.active)
        .map(marks => {
          const panel = marks.panel;
          return {
            path: panel.context.path,
            cells: marks.problems().map(problems => cellEntry(panel.context.path, problems)),
            open: location => {
              app.shell.activateById(panel.id);
              goToCell(panel, location);
            }
          };
        });
    const problems = new ProblemsPanel(options, notebookProblems);
    problems.title.icon = listIcon;
    app.shell.add(problems, 'right', { rank: 1000 });
    restorer?.add(problems, 'ipylsp-problems');

    let status: StatusItem | null = null;
    let pending = 0;
    const cellsChanged = (): void => {
      // typing moves marks: one redraw per burst
      window.clearTimeout(pending);
      pending = window.setTimeout(() => {
        const cells = notebookProblems().flatMap(n => n.cells);
        if (status) {
          status.cellErrors = errorCount(cells);
        }
        problems.cellsChanged();
      }, 100);
    };
    store.followed.connect(cellsChanged);

    // Notebooks: each one's marks from its kernel; those opened before this plugin activated
    // hold a rendermime clone made without the factory.
    const register = (panel: NotebookPanel): void => {
      if (!panel.content.rendermime.getFactory(MIME_TYPE)) {
        panel.content.rendermime.addFactory(factory);
      }
      if (byPanel.has(panel)) {
        return;
      }
      const marks = new NotebookMarks(panel, store);
      byPanel.set(panel, marks);
      marks.changed.connect(cellsChanged);
      panel.disposed.connect(() => {
        byPanel.delete(panel);
        marks.dispose();
        cellsChanged();
      });
    };
    notebooks?.forEach(register);
    notebooks?.widgetAdded.connect((_, panel) => {
      register(panel);
    });

    const fileMarks = new FileMarks(store, app.serviceManager.contents);
    editors?.forEach(widget => {
      fileMarks.watch(widget);
    });
    editors?.widgetAdded.connect((_, widget) => {
      fileMarks.watch(widget);
    });

    app.commands.addCommand(PROBLEMS_COMMAND, {
      label: 'ipylsp: Problems',
      caption: "The workspace's current problems, grouped by file and notebook",
      icon: listIcon,
      execute: () => {
        if (!problems.isAttached) {
          app.shell.add(problems, 'right', { rank: 1000 });
        }
        app.shell.activateById(problems.id);
      }
    });
    palette?.addItem({ command: PROBLEMS_COMMAND, category: 'ipylsp' });

    const activeCode = () => {
      const panel = notebooks?.currentWidget ?? null;
      const cell = panel?.content.activeCell ?? null;
      return panel && cell?.model.type === 'code' ? { panel, cell } : null;
    };
    app.commands.addCommand(CHECK_CELL_COMMAND, {
      label: 'ipylsp: Check This Cell Before Running',
      caption:
        "Mark what the active cell's current text would have if it ran now, checked by the " +
        "notebook's kernel; nothing runs",
      isEnabled: () => activeCode() !== null,
      execute: async () => {
        const found = activeCode();
        if (!found) {
          return;
        }
        register(found.panel);
        const marks = byPanel.get(found.panel);
        const answer = marks ? await marks.preflight(found.cell.model) : null;
        Notification.emit(
          preflightMessage(answer),
          answer?.state === 'ready' ? 'info' : 'warning',
          {
            autoClose: 5000
          }
        );
        return answer;
      }
    });
    palette?.addItem({ command: CHECK_CELL_COMMAND, category: 'ipylsp' });

    if (statusBar) {
      status = new StatusItem({
        onProblems: () => {
          void app.commands.execute(PROBLEMS_COMMAND);
        }
      });
      statusBar.registerStatusItem('ipylsp:status', {
        item: status,
        align: 'left',
        rank: 5
      });
    }

    events.rendered.connect((_, report) => {
      status?.refresh();
      problems.reportRendered(report);
      for (const file of report.files) {
        const path = file.cell === undefined ? options.resolve(file) : null;
        if (path !== null) {
          fileMarks.refreshPath(path); // a cell wrote it: its editors ask the store again
        }
      }
    });
  }
};

export default plugin;
