// lti.js sends a deep linking answer back to the learning platform as soon
// as its page loads: the page's form holds the signed answer and posts it
// to the platform; its button does the same without JavaScript.
const form = document.querySelector("form[data-autosubmit]");
if (form) {
  form.submit();
}
