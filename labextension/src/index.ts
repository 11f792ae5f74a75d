/**
 * ipylsp in JupyterLab: one plugin that holds the document manager, so the diagnostics
 * renderer it registers can open a location in the editor without command links (those raise
 * the trust dialog in untrusted notebooks), plus the status bar item and the Problems panel.
 */

import { ILayoutRestorer, JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { ICommandPalette } from '@jupyterlab/apputils';
import { PageConfig } from '@jupyterlab/coreutils';
import { IDocumentManager } from '@jupyterlab/docmanager';
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import { IRenderMimeRegistry } from '@jupyterlab/rendermime';
import { IStatusBar } from '@jupyterlab/statusbar';
import { listIcon } from '@jupyterlab/ui-components';

import { openLocation } from './open';
import { serverRelative } from './paths';
import { ProblemsPanel } from './problems';
import { rendererFactory, ReportEvents } from './renderer';
import { IRenderOptions } from './report';
import { MIME_TYPE } from './schema';
import { StatusItem } from './status';

export const PROBLEMS_COMMAND = 'ipylsp:problems';

const plugin: JupyterFrontEndPlugin<void> = {
  id: 'ipylsp:plugin',
  description: 'ipylsp diagnostics: the output renderer, a status bar item, a Problems panel.',
  autoStart: true,
  requires: [IDocumentManager, IRenderMimeRegistry],
  optional: [IStatusBar, ICommandPalette, INotebookTracker, ILayoutRestorer],
  activate: (
    app: JupyterFrontEnd,
    docManager: IDocumentManager,
    rendermime: IRenderMimeRegistry,
    statusBar: IStatusBar | null,
    palette: ICommandPalette | null,
    notebooks: INotebookTracker | null,
    restorer: ILayoutRestorer | null
  ): void => {
    // JupyterLab's `serverRoot` writes the home directory as "~"; the server extension gives
    // the root absolute, as the reports' paths are.
    const serverRoot =
      PageConfig.getOption('ipylspRoot') || PageConfig.getOption('serverRoot');
    const options: IRenderOptions = {
      resolve: file => serverRelative(file.absolute_path, serverRoot),
      open: (path, { diagnostic }) => {
        openLocation(docManager, path, diagnostic.line, diagnostic.column).catch(
          (error: unknown) => {
            console.warn(`ipylsp: could not open ${path}`, error);
          }
        );
      }
    };
    const events = new ReportEvents();
    const factory = rendererFactory(options, events);
    rendermime.addFactory(factory);
    // Notebooks opened before this plugin activated hold a clone made without the factory.
    const register = (panel: NotebookPanel): void => {
      if (!panel.content.rendermime.getFactory(MIME_TYPE)) {
        panel.content.rendermime.addFactory(factory);
      }
    };
    notebooks?.forEach(register);
    notebooks?.widgetAdded.connect((_, panel) => {
      register(panel);
    });

    const problems = new ProblemsPanel(options);
    problems.title.icon = listIcon;
    app.shell.add(problems, 'right', { rank: 1000 });
    restorer?.add(problems, 'ipylsp-problems');

    app.commands.addCommand(PROBLEMS_COMMAND, {
      label: 'ipylsp: Problems',
      caption: "The workspace's current problems, grouped by file",
      icon: listIcon,
      execute: () => {
        if (!problems.isAttached) {
          app.shell.add(problems, 'right', { rank: 1000 });
        }
        app.shell.activateById(problems.id);
      }
    });
    palette?.addItem({ command: PROBLEMS_COMMAND, category: 'ipylsp' });

    let status: StatusItem | null = null;
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
    });
  }
};

export default plugin;
