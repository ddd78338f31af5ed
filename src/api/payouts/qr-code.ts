import { createHash } from 'node:crypto';
import QRCode from 'qrcode';

export const QR_FORMATS = {
  svg: 'image/svg+xml',
  png: 'image/png',
} as const;
export type QrFormat = keyof typeof QR_FORMATS;

// Error correction M (15 %) keeps a BR Code of ~150 characters at a version phones scan easily from
// a screen; the 4-module quiet zone is what the QR standard asks for. Changing these changes the
// image, so RENDERING is part of the ETag.
const RENDERING = { errorCorrectionLevel: 'M', margin: 4 } as const;
const PNG_SCALE = 8; // pixels per module: about 500 px square for a typical BR Code

/** A QR code of a PIX copy-and-paste code, as an SVG document or a PNG image. */
export async function renderQrCode(text: string, format: QrFormat): Promise<Buffer> {
  if (format === 'svg') return Buffer.from(await QRCode.toString(text, { ...RENDERING, type: 'svg' }));
  return QRCode.toBuffer(text, { ...RENDERING, type: 'png', scale: PNG_SCALE });
}

/**
 * renderQrCode behind a small least-recently-used cache keyed by ETag. A PNG takes tens of
 * milliseconds of CPU on the event loop, and a checkout page showing a code tends to fetch it more
 * than once; a few hundred images of ~5 KB each bound the memory.
 */
export function cachedQrRenderer(maxEntries = 256) {
  const images = new Map<string, Promise<Buffer>>();
  return (text: string, format: QrFormat, etag = qrCodeEtag(text, format)): Promise<Buffer> => {
    let image = images.get(etag);
    if (image) {
      images.delete(etag); // re-inserted below: Map order is the recency order
    } else {
      image = renderQrCode(text, format);
      // A failed render is not kept.
      image.catch(() => images.delete(etag));
    }
    images.set(etag, image);
    if (images.size > maxEntries) images.delete(images.keys().next().value!);
    return image;
  };
}

/**
 * A strong ETag of the image, known without rendering it: the image is a pure function of the text,
 * the format and the rendering options.
 */
export function qrCodeEtag(text: string, format: QrFormat): string {
  const digest = createHash('sha256')
    .update(JSON.stringify({ text, format, RENDERING, PNG_SCALE }))
    .digest('base64url');
  return `"qr-${format}-${digest.slice(0, 32)}"`;
}
