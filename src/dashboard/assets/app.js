// Enhancements only: every page works without this file.

function announce(text) {
  const status = document.getElementById('copy-status')
  if (status) status.textContent = text
}

async function copy(button) {
  const source = document.getElementById(button.dataset.copy)
  if (!source) return
  const text = 'value' in source ? source.value : source.textContent
  try {
    await navigator.clipboard.writeText(text)
  } catch {
    // Without clipboard permission: select the text and let the browser copy it.
    const range = document.createRange()
    if ('select' in source) source.select()
    else {
      range.selectNodeContents(source)
      const selection = window.getSelection()
      selection.removeAllRanges()
      selection.addRange(range)
    }
    document.execCommand('copy')
  }
  announce('Copied to the clipboard.')
}

function usageHint() {
  const hint = document.getElementById('usage-hint')
  if (!hint) return
  const update = () => {
    const secret = document.querySelector('input[name="scopes"][data-secret]:checked')
    hint.textContent = secret
      ? 'This will be a secret token (sk).'
      : 'This will be a public token (pk).'
  }
  for (const box of document.querySelectorAll('input[name="scopes"]')) {
    box.addEventListener('change', update)
  }
  update()
}

// A Copy button is rendered hidden: it does nothing without this file.
function showCopyButtons() {
  for (const button of document.querySelectorAll('button[data-copy][hidden]')) {
    button.hidden = false
  }
}

document.addEventListener('click', (event) => {
  const button = event.target.closest('button[data-copy]')
  if (button) copy(button)
})
document.addEventListener('DOMContentLoaded', () => {
  showCopyButtons()
  usageHint()
})
