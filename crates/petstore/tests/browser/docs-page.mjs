// The docs page in a real browser: `node docs-page.mjs BASE_URL API_KEY SCREENSHOT`, where
// BASE_URL is the server's origin (http://127.0.0.1:PORT). Exits non-zero, saying why, when the
// page lists the wrong operations, does not mark getPet deprecated, cannot run "Try it out" on
// listPets with the key, asks anything of another host, or has anything blocked by its
// Content-Security-Policy. Chromium is Debian's (/usr/bin/chromium,
// or PETSTORE_TEST_CHROMIUM); playwright-core never downloads a browser of its own.
import { chromium } from 'playwright-core';

const [origin, key, screenshot] = process.argv.slice(2);
if (!origin || !key || !screenshot) {
  console.error('usage: node docs-page.mjs BASE_URL API_KEY SCREENSHOT');
  process.exit(2);
}

const browser = await chromium.launch({
  executablePath: process.env.PETSTORE_TEST_CHROMIUM || '/usr/bin/chromium',
  args: [
    '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync',
  ],
});
const failures = [];
let page;
try {
  page = await browser.newPage({ viewport: { width: 1280, height: 1600 } });
  const foreign = [];
  page.on('request', (request) => {
    const url = new URL(request.url());
    if (url.protocol !== 'data:' && url.protocol !== 'blob:' && url.origin !== origin) {
      foreign.push(request.url());
    }
  });
  // The page runs under its Content-Security-Policy: anything it blocks is a failure.
  const blocked = [];
  page.on('console', (message) => {
    if (/Content Security Policy|Refused to/i.test(message.text())) {
      blocked.push(message.text());
    }
  });
  page.setDefaultTimeout(20_000);

  await page.goto(`${origin}/docs`);
  await page.waitForSelector('.opblock');

  for (const id of ['listPets', 'createPet', 'getPet', 'listOrders', 'placeOrder', 'getOrder', 'cancelOrder', 'getInventory', 'getRateLimit']) {
    if ((await page.locator(`.opblock:has(.opblock-summary-operation-id:text-is("${id}"))`).count()) !== 1) {
      failures.push(`operation ${id} is not listed once`);
    }
  }
  if ((await page.locator('.opblock-deprecated:has-text("getPet")').count()) !== 1) {
    failures.push('getPet is not shown as deprecated');
  }

  // Authorise with the key (the bearer scheme).
  await page.click('.auth-wrapper .authorize');
  await page.fill('.auth-container input', key);
  await page.click('.auth-btn-wrapper .authorize');
  await page.click('.auth-btn-wrapper .btn-done');

  // Try it out: listPets.
  const listPets = page.locator('.opblock:has(.opblock-summary-operation-id:text-is("listPets"))');
  await listPets.locator('.opblock-summary').click();
  // The page opens operations ready to try (tryItOutEnabled); older settings need the button.
  if ((await listPets.locator('.execute').count()) === 0) {
    await listPets.locator('.try-out__btn').click();
  }
  await listPets.locator('.execute').click();
  const status = listPets.locator('.live-responses-table tr.response .response-col_status').first();
  await status.waitFor();
  const code = (await status.innerText()).trim();
  if (code !== '200') {
    failures.push(`listPets answered ${code} in the page, not 200`);
  }
  await page.screenshot({ path: screenshot, fullPage: true });
  if (foreign.length > 0) {
    failures.push(`the page asked other hosts: ${foreign.join(', ')}`);
  }
  if (blocked.length > 0) {
    failures.push(`the Content-Security-Policy blocked: ${blocked.join(' | ')}`);
  }
} catch (error) {
  failures.push(String(error));
  await page?.screenshot({ path: screenshot, fullPage: true }).catch(() => {});
} finally {
  await browser.close();
}
if (failures.length > 0) {
  console.error(failures.join('\n'));
  process.exit(1);
}
console.log('docs page: operations listed, getPet deprecated, listPets tried with the key: 200');
