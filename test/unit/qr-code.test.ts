import jsQR from 'jsqr';
import { PNG } from 'pngjs';
import { cachedQrRenderer, qrCodeEtag, renderQrCode } from '../../src/api/payouts/qr-code';

const CODE =
  '00020101021226580014br.gov.bcb.pix0136123e4567-e12b-12d1-a456-4266554400005204000053039865802BR5913Fulano de Tal6008BRASILIA62070503***63041D3D';

// (A PNG renders in tens of milliseconds under node but takes a second or two inside jest's module
// sandbox, so only one test here renders PNGs.)
describe('QR code rendering', () => {
  it('the PNG decodes back to the text', async () => {
    const png = PNG.sync.read(await renderQrCode(CODE, 'png'));
    expect(jsQR(new Uint8ClampedArray(png.data), png.width, png.height)?.data).toBe(CODE);
  });

  it('the ETag is stable for the same text and format, different otherwise', () => {
    expect(qrCodeEtag(CODE, 'svg')).toBe(qrCodeEtag(CODE, 'svg'));
    expect(qrCodeEtag(CODE, 'svg')).not.toBe(qrCodeEtag(CODE, 'png'));
    expect(qrCodeEtag(CODE, 'png')).not.toBe(qrCodeEtag(`${CODE}0`, 'png'));
  });

  it('the cache hands back the rendered image and forgets the least recently used', async () => {
    const render = cachedQrRenderer(2);
    const first = await render('a', 'svg');
    expect(await render('a', 'svg')).toBe(first); // the same buffer: not rendered again
    await render('b', 'svg');
    await render('a', 'svg'); // a is now the most recent
    await render('c', 'svg'); // evicts b
    expect(await render('a', 'svg')).toBe(first);
    const b = await render('b', 'svg');
    expect(b).toEqual(await renderQrCode('b', 'svg'));
    expect(await render('a', 'svg')).toBe(first);
    await render('c', 'svg'); // evicts b, then a is the least recent
    await render('b', 'svg'); // evicts a
    expect(await render('a', 'svg')).not.toBe(first);
  });
});
