import type { AddRoute } from '../middleware/allow-methods.ts';
import { homeChecks, type HomeSources } from './home-checks.ts';
import type { ScreenContext } from './portal-screen.ts';
import { chromeOf, sendPage } from './screen.ts';
import { homePage } from './views/home.ts';

/**
 * The Home screen at {base}admin/, where a sign-in lands: is each part of Doorman working, and where to fix
 * it (home-checks.ts). Read-only; each load checks again, every slow check bounded by its deadline.
 */
export function homeScreen(
  route: AddRoute,
  context: ScreenContext,
  sources: Omit<HomeSources, 'paths' | 'now'>,
): void {
  const { paths } = context;
  route('/admin/', {
    GET: [
      ...context.signedIn,
      async function showHome(ctx) {
        const checks = await homeChecks({ ...sources, paths, now: context.clock.now() });
        sendPage(ctx, 200, homePage({ paths, ...chromeOf(ctx), checks }));
      },
    ],
  });
}
